import { randomBytes, randomUUID } from 'node:crypto';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

export const newId = {
  user: () => `usr_${hex(12)}`,
  app: () => `app_${hex(12)}`,
  appMessenger: () => `am_${hex(12)}`,
  credential: () => `cred_${hex(12)}`,
  batch: () => randomUUID(),
  session: () => randomUUID(),
  /** 32-character hex, the interface's message id format. */
  message: () => hex(16),
};
