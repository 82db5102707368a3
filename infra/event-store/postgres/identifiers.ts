/** Names and lock classes shared by the PostgreSQL store's SQL (see schema.ts for the locks). */

export const MIGRATION_LOCK_CLASS = 724_001;
export const POSITION_LOCK_CLASS = 724_002;
export const TAG_LOCK_CLASS = 724_003;

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Validates and double-quotes a schema name (letters, digits, underscores; at most 63 chars). */
export const quoteSchema = (schema: string): string => {
  if (!identifier.test(schema)) throw new RangeError(`Invalid PostgreSQL schema name ${JSON.stringify(schema)}`);
  return `"${schema}"`;
};

/** A SQL string literal. */
export const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;
