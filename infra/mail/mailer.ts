import { UnavailableError } from '../errors/unavailable.ts';

/** One plain-text mail. */
export interface Mail {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

/** The Mailer port: sends mail through the operator's mail server. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/** The mail server could not be reached, or did not take the mail. Never carries the mail's text. */
export class MailUnavailableError extends UnavailableError {
  override readonly name = 'MailUnavailableError';
}

/**
 * SMTP through nodemailer: `url` is `smtp://user:pass@host:587` (STARTTLS when the server offers
 * it) or `smtps://…:465`. A failure is reported without the server's answer (it may quote the
 * message) and without the URL (it holds the password). nodemailer is loaded only here, when a
 * mail server is configured (it costs about 12 MB of memory per thread).
 */
export const openSmtpMailer = async (url: string, from: string, timeoutMs = 10_000): Promise<Mailer> => {
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport(url, {
    from,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    logger: false,
  } as Parameters<typeof nodemailer.createTransport>[1]);
  return {
    async send(mail) {
      try {
        await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
      } catch (error) {
        const code = (error as { code?: unknown; responseCode?: unknown }).code;
        const status = (error as { responseCode?: unknown }).responseCode;
        throw new MailUnavailableError(`The mail server did not take the mail (${[code, status].filter((x) => x !== undefined).join(' ') || 'unknown'})`);
      }
    },
    close: () => transport.close(),
  };
};
