/**
 * What the page Relay served says about this install and this browser (the root's data
 * attributes, apps/http/dashboard-pages.ts): read once, before anything is asked of the account API.
 */
const root = typeof document === 'undefined' ? null : document.getElementById('app');

/** Whether this Relay mails sign-in links and alerts (it has a mail server, SMTP_URL). */
export const MAIL = root?.dataset.mail === 'on';

/** Whether the browser's session cookie had a live session when the page was served. */
export const SIGNED_IN = root?.dataset.signedIn === 'on';

/** What runs on Relay's simulator: messengers (`signal`, `simplex`, `session`) and `payments`. */
export const SIMULATED: readonly string[] = (root?.dataset.simulated ?? '').split(' ').filter(Boolean);

const WORDS: Record<string, string> = { signal: 'Signal', simplex: 'SimpleX', session: 'Session', payments: 'payments' };

/** "Signal, SimpleX and payments": the simulated parts in words. */
export const simulatedInWords = (): string => {
  const words = SIMULATED.map((part) => WORDS[part] ?? part);
  return words.length < 2 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
};
