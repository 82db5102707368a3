/**
 * Signing in: a one-time link by e-mail, a code sent from a linked messenger contact, or the
 * recovery code. On an install without a mail server the page says how the operator gets a link.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import { ErrorNote } from '../ui';

const WHY: Record<string, string> = {
  invalid: 'That sign-in link is not valid.',
  used: 'That sign-in link was used already: ask for a new one.',
  expired: 'That sign-in link has expired: ask for a new one.',
};

export const SignIn = (props: { mail: boolean; why: string | null; onSignedIn: () => void }) => {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState<string | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const [code, setCode] = useState<{ command: string; pollToken: string; expiresAt: string } | undefined>();
  const [recovery, setRecovery] = useState({ email: '', code: '' });

  const askForLink = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    const outcome = await run(api.POST('/dashboard/auth/email', { body: { email } }));
    if (outcome.ok) setSent(`A sign-in link is on its way to ${email}. It works once, until ${new Date(outcome.data.data.expiresAt).toLocaleTimeString()}.`);
    else setFailure(outcome.failure);
  };

  const askForCode = async () => {
    setFailure(undefined);
    const outcome = await run(api.POST('/dashboard/auth/messenger'));
    if (outcome.ok) setCode(outcome.data.data);
    else setFailure(outcome.failure);
  };

  // The page follows the code with GETs, which never sign in; once a linked contact sent it, this
  // browser (the one that asked) posts its poll token, which signs it in.
  useEffect(() => {
    if (!code) return;
    const path = { params: { path: { pollToken: code.pollToken } } };
    const timer = setInterval(async () => {
      const polled = await run(api.GET('/dashboard/auth/messenger/{pollToken}', path));
      const outcome = polled.ok && polled.data.data.status === 'confirmed' ? await run(api.POST('/dashboard/auth/messenger/{pollToken}', path)) : polled;
      if (outcome.ok && outcome.data.data.status === 'signed-in') {
        clearInterval(timer);
        props.onSignedIn();
      } else if (!outcome.ok) {
        clearInterval(timer);
        setCode(undefined);
        setFailure(outcome.failure);
      }
    }, 2000);
    return () => clearInterval(timer);
  }, [code]);

  const recover = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    const outcome = await run(api.POST('/dashboard/auth/recover', { body: recovery }));
    if (outcome.ok) props.onSignedIn();
    else setFailure(outcome.failure);
  };

  return (
    <section aria-labelledby="sign-in">
      <h1 id="sign-in">Sign in</h1>
      {props.why && WHY[props.why] && (
        <p class="error" role="alert">
          {WHY[props.why]}
        </p>
      )}
      <ErrorNote failure={failure} />
      <h2>With a link by e-mail</h2>
      {props.mail ? (
        sent ? (
          <p role="status">{sent}</p>
        ) : (
          <form onSubmit={askForLink}>
            <label for="email">E-mail address</label>
            <input id="email" name="email" type="email" autocomplete="email" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
            <button type="submit">Send me a sign-in link</button>
          </form>
        )
      ) : (
        <p class="note" data-no-mail>
          This Relay has no mail server (<code>SMTP_URL</code>), so it cannot mail sign-in links. Follow the one-time link <code>npm start</code> printed for the operator, or
          make one in a terminal on the Relay machine: <code>npx relay session link --email you@example.com</code>.
        </p>
      )}
      <h2>From a messenger contact you linked</h2>
      {code ? (
        <p role="status">
          Send <code data-command>{code.command}</code> to one of your Relay bots from your linked contact before {new Date(code.expiresAt).toLocaleTimeString()}. This page goes on by
          itself once it arrives.
        </p>
      ) : (
        <button type="button" onClick={askForCode}>
          Get a sign-in code
        </button>
      )}
      <h2>With your recovery code</h2>
      <form onSubmit={recover}>
        <label for="recover-email">E-mail address</label>
        <input id="recover-email" type="email" autocomplete="email" required value={recovery.email} onInput={(e) => setRecovery({ ...recovery, email: (e.target as HTMLInputElement).value })} />
        <label for="recover-code">Recovery code</label>
        <input id="recover-code" autocomplete="off" required value={recovery.code} onInput={(e) => setRecovery({ ...recovery, code: (e.target as HTMLInputElement).value })} />
        <button type="submit">Sign in with the recovery code</button>
      </form>
    </section>
  );
};

/**
 * The page a sign-in link opens (`/dashboard/sign-in#<link>`): following the link signed nobody in
 * (a mail scanner or another site may open it); this button posts it, from this origin only.
 */
export const ConfirmSignIn = (props: { onSignedIn: () => void }) => {
  const [link] = useState(() => location.hash.slice(1));
  const [failure, setFailure] = useState<Failure | undefined>();
  const [busy, setBusy] = useState(false);

  // The link stays in this page's memory only: not in the address bar, the history or a bookmark.
  useEffect(() => {
    if (location.hash) history.replaceState(null, '', location.pathname);
  }, []);

  const signIn = async () => {
    setBusy(true);
    setFailure(undefined);
    const outcome = await run(api.POST('/dashboard/auth/email/{link}', { params: { path: { link } } }));
    setBusy(false);
    if (outcome.ok) props.onSignedIn();
    else setFailure(outcome.failure);
  };

  return (
    <section aria-labelledby="confirm-sign-in">
      <h1 id="confirm-sign-in">Finish signing in</h1>
      <ErrorNote failure={failure} />
      {link === '' ? (
        <p>
          This page finishes a sign-in with the link from your mail, but it was opened without one. Follow the link again, or <a href="/dashboard">ask for a new one</a>.
        </p>
      ) : (
        <>
          <p>You followed a sign-in link for Relay. Sign in with it in this browser? The link works once.</p>
          <button type="button" onClick={signIn} disabled={busy}>
            Sign in
          </button>
        </>
      )}
    </section>
  );
};
