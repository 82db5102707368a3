import { Option, type Command } from 'commander';
import { prepareDataDir } from '../services/data-dir.ts';
import { CONFIG_KEYS, flagName, loadConfig, type Config, type ConfigKey } from '../services/config.ts';
import { SECRET_FILE_SETTINGS, SECRET_SETTINGS, type SecretFileSetting } from '../services/secret-settings.ts';

/**
 * Every command takes every configuration setting as a flag (`--data-dir`), overriding the
 * environment; secrets are refused as flags (they would be visible in `ps`): their files are named
 * instead (`--relay-secret-key-file`), or they come from the environment (secret-settings.ts).
 */
export const withConfigOptions = (command: Command): Command => {
  for (const key of CONFIG_KEYS) command.addOption(new Option(`--${flagName(key)} <value>`, `overrides ${key}`).hideHelp());
  for (const key of SECRET_FILE_SETTINGS) command.addOption(new Option(`--${flagName(key)} <path>`, `overrides ${key}`).hideHelp());
  return command.addHelpText(
    'after',
    '\nEvery setting of the environment (PORT, DATA_DIR, ...) is also a flag: --port, --data-dir, ... but secrets, which the environment ' +
      `or a file gives (${SECRET_SETTINGS.join(', ')}; each also as <NAME>_FILE, the path of a file that holds it).`,
  );
};

/** The configuration of a command, with its DATA_DIR made private (data-dir.ts). */
export const configFrom = (options: Record<string, unknown>): Config => {
  const config = readConfig(options);
  prepareDataDir(config.dataDir);
  return config;
};

const readConfig = (options: Record<string, unknown>): Config => {
  const flags: Partial<Record<ConfigKey | SecretFileSetting, string>> = {};
  for (const key of [...CONFIG_KEYS, ...SECRET_FILE_SETTINGS]) {
    const camel = flagName(key).replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    const value = options[camel];
    if (typeof value === 'string') flags[key] = value;
  }
  return loadConfig(process.env, flags);
};
