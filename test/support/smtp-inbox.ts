/** A real SMTP server in the test process (smtp-server), keeping what it receives, parsed (mailparser). */
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { waitFor } from './account-fixture.ts';

export interface ReceivedMail {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

export interface SmtpInbox {
  readonly url: string;
  readonly mails: ReceivedMail[];
  /** The first mail to `to` after the first `after` mails that `matches`, waiting for it. */
  next(to: string, options?: { after?: number; matches?: (mail: ReceivedMail) => boolean }): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export const startSmtpInbox = async (): Promise<SmtpInbox> => {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((mail) => {
          mails.push({ to: (Array.isArray(mail.to) ? mail.to[0] : mail.to)?.value[0]?.address ?? '', subject: mail.subject ?? '', text: mail.text ?? '' });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    mails,
    next: (to, options = {}) => waitFor(() => mails.slice(options.after ?? 0).find((m) => m.to === to && (options.matches?.(m) ?? true)), 10_000, `a mail to ${to}`),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};
