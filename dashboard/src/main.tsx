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
import { BASE, interceptLinks, navigate, useLocation } from './router';
import { ErrorNote, Frame, Loading } from './ui';
import './styles.css';

type User = components['schemas']['User'];

const Dashboard = (props: { mail: boolean }) => {
  const { path, query } = useLocation();
  const [user, setUser] = useState<User | null | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();

  const loadUser = async () => {
    setFailure(undefined);
    const outcome = await run(api.GET('/dashboard/api/dashboard/user'));
    if (outcome.ok) setUser(outcome.data);
    else if (outcome.failure.signedOut) setUser(null);
    else setFailure(outcome.failure);
  };
  useEffect(() => void loadUser(), []);

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
  // A sign-in link's page, signed in or not: its button signs this browser in with the link.
  if (path === `${BASE}/sign-in`)
    return (
      <Frame path={path} email={user?.email}>
        <ConfirmSignIn onSignedIn={signedIn} />
      </Frame>
    );
  if (user === undefined)
    return <Frame path={path}>{failure ? <ErrorNote failure={failure} onRetry={loadUser} /> : <Loading />}</Frame>;
  if (user === null)
    return (
      <Frame path={path}>
        <ErrorNote failure={failure} />
        <SignIn mail={props.mail} why={query.get('signin')} onSignedIn={signedIn} />
      </Frame>
    );

  const page = (() => {
    const appId = /^\/dashboard\/apps\/([^/]+)$/.exec(path)?.[1];
    if (appId) return <AppDetail appId={decodeURIComponent(appId)} onFailure={signedOut} />;
    switch (path) {
      case BASE:
      case `${BASE}/apps`:
        return <Apps onFailure={signedOut} />;
      case `${BASE}/keys`:
        return <Keys onFailure={signedOut} />;
      case `${BASE}/notifications`:
        return <Notifications onFailure={signedOut} />;
      case `${BASE}/billing`:
        return <Billing onFailure={signedOut} />;
      case `${BASE}/account`:
        return <Account user={user} onSignedOut={() => signedOut()} onRenamed={loadUser} />;
      default:
        return (
          <section>
            <h1>Page not found</h1>
            <p>
              <a href={`${BASE}/apps`}>Go to your apps</a>.
            </p>
          </section>
        );
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
  render(<Dashboard mail={root.dataset.mail === 'on'} />, root);
}
