/**
 * The check every run-time correction of kafkajs makes before it replaces or wraps a method:
 * the method's source still holds the parts that correction was written against (kafkajs 2.2.4,
 * its last release). If a kafkajs upgrade changed them, this throws instead of patching blindly.
 */
export const expectKafkajsSource = (what: string, method: unknown, hints: readonly string[], module: string): void => {
  if (typeof method !== 'function' || !hints.every((hint) => method.toString().includes(hint)))
    throw new Error(`kafkajs ${what} is not the one infra/broker/kafka/${module} was written for: check that module against this kafkajs version`);
};
