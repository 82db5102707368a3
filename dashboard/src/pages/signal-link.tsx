/**
 * Linking a Signal account as the bot's identity by scanning a QR code with the Signal app (the
 * `sgnl://linkdevice` URI signal-cli gives), through Relay's own route (outside the account API):
 * `POST /dashboard/signal/link`, then `GET /dashboard/signal/link/:appMessengerId` until linked.
 * The panel says one thing at a time: what to do, the QR code, the outcome, or why it failed (a
 * refused start reads the app again: a bot that got its account meanwhile loses the panel).
 */
import { useEffect, useState } from 'preact/hooks';
import type { Failure } from '../api';
import { relayRoute } from '../relay-routes';
import { ErrorNote, Qr } from '../ui';

type State = { status: 'none' } | { status: 'starting' } | { status: 'pending'; uri: string } | { status: 'linked'; account: string } | { status: 'failed'; reason: string };

const call = async (path: string, body?: unknown): Promise<{ ok: true; state: State } | { ok: false; failure: Failure }> => {
  const outcome = await relayRoute<State>(path, body);
  return outcome.ok ? { ok: true, state: outcome.data } : outcome;
};

export const SignalLink = (props: { appMessengerId: string; onChanged: () => void }) => {
  const [state, setState] = useState<State>({ status: 'none' });
  const [failure, setFailure] = useState<Failure | undefined>();

  useEffect(() => {
    if (state.status !== 'pending') return;
    const timer = setInterval(async () => {
      const outcome = await call(`/dashboard/signal/link/${encodeURIComponent(props.appMessengerId)}`);
      if (!outcome.ok) return setFailure(outcome.failure);
      if (outcome.state.status !== 'pending') {
        setState(outcome.state);
        if (outcome.state.status === 'linked') props.onChanged();
      }
    }, 1500);
    return () => clearInterval(timer);
  }, [state.status]);

  const start = async () => {
    setFailure(undefined);
    const outcome = await call('/dashboard/signal/link', { appMessengerId: props.appMessengerId });
    if (outcome.ok) return setState(outcome.state);
    setState({ status: 'none' });
    setFailure(outcome.failure);
    // Refused: perhaps the bot has its account by now (bound or linked elsewhere); the app says.
    props.onChanged();
  };

  return (
    <div class="note" data-signal-link>
      {failure ? (
        <>
          <ErrorNote failure={failure} />
          <button type="button" onClick={start}>
            Try linking again
          </button>
        </>
      ) : state.status === 'pending' ? (
        <>
          <p>Scan this with the Signal app of the phone whose account the bot will use: Settings → Linked devices → Link new device. This page goes on by itself.</p>
          <Qr text={state.uri} label="QR code to link the Signal bot to your phone's account" />
        </>
      ) : state.status === 'linked' ? (
        <p role="status">Linked: the bot now uses the Signal account {state.account}.</p>
      ) : (
        <>
          {state.status === 'failed' && <p role="alert">{state.reason}</p>}
          <p>The Signal bot has no account yet. Link it to a Signal account of yours by scanning a QR code with the Signal app.</p>
          <button type="button" onClick={start}>
            Link a Signal account
          </button>
        </>
      )}
    </div>
  );
};
