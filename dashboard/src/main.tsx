/**
 * Relay's web dashboard: pages under /dashboard that call the account API through its proxy
 * with the session cookie. Statistics are pages Relay renders itself (/dashboard/stats), linked
 * from here.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from './api';
import type { components } from './api/account-api';
import { Account } from './pages/account';
import { AppDetail } from './pages/app-detail';
import { Apps } from './pages/apps';
import { Billing } from './pages/billing';
import { Keys } from './pages/keys';
import { Notifications } from './pages/notifications';
import { ConfirmSignIn, SignIn } from './pages/sign-in';
import { MAIL, SIGNED_IN } from './install';
import { startLiveFigures } from './live';
import { BASE, interceptLinks, navigate, useLocation } from './router';
import { ErrorNote, Frame, Loading, NotFound } from './ui';
import './styles.css';

type User = components['schemas']['User'];

/** The pages the script shows (the rest is not found, signed in or not). */
const PAGES = new Set([BASE, `${BASE}/sign-in`, `${BASE}/apps`, `${BASE}/keys`, `${BASE}/notifications`, `${BASE}/billing`, `${BASE}/account`]);
const appOf = (path: string) => /^\/dashboard\/apps\/([^/]+)$/.exec(path)?.[1];

const Dashboard = (props: { mail: boolean; signedIn: boolean }) => {
  const { path, query } = useLocation();
  // Signed out when the page was served: the sign-in page at once, without asking the account API.
  const [user, setUser] = useState<User | null | undefined>(props.signedIn ? undefined : null);
  const [failure, setFailure] = useState<Failure | undefined>();

  const loadUser = async () => {
    setFailure(undefined);
    const outcome = await run(api.GET('/dashboard/api/dashboard/user'));
    if (outcome.ok) setUser(outcome.data);
    else if (outcome.failure.signedOut) setUser(null);
    else setFailure(outcome.failure);
  };
  useEffect(() => {
    if (props.signedIn) void loadUser();
  }, []);

  // Each new page gets the focus (not the first one), for keyboard and screen-reader users.
  const [first, setFirst] = useState(true);
  useEffect(() => {
    if (first) setFirst(false);
    else document.getElementById('main')?.focus();
  }, [path]);

  const signedOut = (why?: Failure) => {
    setUser(null);
    if (why) setFailure(why);
  };

  const signedIn = () => {
    void loadUser();
    navigate(`${BASE}/apps`);
  };
  if (!PAGES.has(path) && !appOf(path))
    return (
      <Frame path={path} email={user?.email}>
        <NotFound />
      </Frame>
    );
  // A sign-in link's page, signed in or not: its button signs this browser in with the link.
  if (path === `${BASE}/sign-in`)
    return (
      <Frame path={path} email={user?.email}>
        <ConfirmSignIn onSignedIn={signedIn} />
      </Frame>
    );
  if (user === undefined)
    return (
      <Frame path={path}>
        <h1>Relay</h1>
        {failure ? <ErrorNote failure={failure} onRetry={loadUser} /> : <Loading />}
      </Frame>
    );
  if (user === null)
    return (
      <Frame path={path}>
        <ErrorNote failure={failure} />
        <SignIn mail={props.mail} why={query.get('signin')} onSignedIn={signedIn} />
      </Frame>
    );

  const page = (() => {
    const appId = appOf(path);
    if (appId) return <AppDetail appId={decodeURIComponent(appId)} onFailure={signedOut} />;
    switch (path) {
      case BASE:
      case `${BASE}/apps`:
        return <Apps onFailure={signedOut} />;
      case `${BASE}/keys`:
        return <Keys app={query.get('app')} onFailure={signedOut} />;
      case `${BASE}/notifications`:
        return <Notifications onFailure={signedOut} />;
      case `${BASE}/billing`:
        return <Billing onFailure={signedOut} />;
      case `${BASE}/account`:
        return <Account user={user} onSignedOut={() => signedOut()} onRenamed={loadUser} />;
      default:
        return <NotFound />;
    }
  })();
  return (
    <Frame path={path} email={user.email}>
      {page}
    </Frame>
  );
};

const root = document.getElementById('app');
if (root) {
  interceptLinks();
  root.replaceChildren();
  render(<Dashboard mail={MAIL} signedIn={SIGNED_IN} />, root);
} else if (document.querySelector('[data-live-state]')) {
  // The live statistics page (rendered by Relay): its figures follow the one stream the tabs share.
  startLiveFigures();
}
