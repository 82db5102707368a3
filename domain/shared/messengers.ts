export const MESSENGERS = ['signal', 'simplex', 'session'] as const;
export type Messenger = (typeof MESSENGERS)[number];
export const isMessenger = (value: unknown): value is Messenger =>
  typeof value === 'string' && (MESSENGERS as readonly string[]).includes(value);
