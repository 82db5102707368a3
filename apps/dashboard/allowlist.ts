/**
 * The account-management routes of the interface, exactly: what the dashboard proxy forwards.
 * Anything else under the prefix (another path, or a known path with another method) is 404.
 */

export type DashboardMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface DashboardRoute {
  readonly method: DashboardMethod;
  /** Relative to the prefix `/dashboard/api/dashboard`; `:name` is one path segment. */
  readonly pattern: string;
  /** False only for the publicly readable billing configuration. */
  readonly session: boolean;
}

const route = (method: DashboardMethod, pattern: string, session = true): DashboardRoute => ({ method, pattern, session });

export const DASHBOARD_ROUTES: readonly DashboardRoute[] = [
  route('GET', '/user'),
  route('POST', '/user'),
  route('GET', '/apps'),
  route('POST', '/apps'),
  route('POST', '/apps/update'),
  route('DELETE', '/apps/:appId'),
  route('PUT', '/app-messengers/:id'),
  route('GET', '/credentials'),
  route('GET', '/credentials-full'),
  route('POST', '/credentials'),
  route('DELETE', '/credentials/:id'),
  route('POST', '/recovery-code'),
  route('GET', '/notification-preferences'),
  route('POST', '/notification-preferences'),
  route('GET', '/group/members'),
  route('GET', '/group/invite-link'),
  route('POST', '/group/members/add'),
  route('POST', '/group/members/remove'),
  route('POST', '/group/promote-admin'),
  route('POST', '/group/demote-admin'),
  route('GET', '/invoices'),
  route('GET', '/invoices/:invoiceId'),
  route('GET', '/invoices/:invoiceId/payment-status'),
  route('POST', '/invoices'),
  route('POST', '/invoices/:invoiceId/cancel'),
  route('GET', '/configuration', false),
];

/**
 * The session's own routes, under `/dashboard/auth` (outside the interface's prefix, which it
 * closes to anything not in its table): sign in by e-mail, a messenger code or the recovery code,
 * sign out, list and end sessions, link messenger contacts.
 */
export const AUTH_ROUTES: readonly DashboardRoute[] = [
  route('POST', '/email', false),
  route('GET', '/email/:link', false),
  route('POST', '/email/:link', false),
  route('POST', '/recover', false),
  route('POST', '/messenger', false),
  route('GET', '/messenger/:pollToken', false),
  route('POST', '/messenger/:pollToken', false),
  route('POST', '/contacts/link'),
  route('GET', '/contacts/link/:linkId'),
  route('GET', '/contacts'),
  route('DELETE', '/contacts/:id'),
  route('POST', '/logout'),
  route('GET', '/sessions'),
  route('DELETE', '/sessions/:sessionId'),
];

/**
 * Relay's own account routes that change state where the interface's table only reads, under
 * `/dashboard/group` (docs/groups.md): turning a group's invite link on.
 */
export const GROUP_ROUTES: readonly DashboardRoute[] = [route('POST', '/invite-link')];

export interface RouteMatch {
  readonly route: DashboardRoute;
  /** Decoded values of the `:params`. */
  readonly params: Readonly<Record<string, string>>;
}

type Segment = { literal: string } | { param: string };

type Compiled = ReadonlyArray<{ route: DashboardRoute; segments: Segment[] }>;

const compile = (routes: readonly DashboardRoute[]): Compiled =>
  routes.map((r) => ({
    route: r,
    segments: r.pattern
      .split('/')
      .slice(1)
      .map((part): Segment => (part.startsWith(':') ? { param: part.slice(1) } : { literal: part })),
  }));

const compiledDashboard = compile(DASHBOARD_ROUTES);

/** A parameter value: non-empty, well-encoded, and not a dot segment (`.`/`..` would let a path escape). */
const paramValue = (raw: string): string | undefined => {
  if (raw === '') return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  if (decoded === '.' || decoded === '..' || decoded.includes('/') || decoded.includes('\\')) return undefined;
  return decoded;
};

/**
 * The allowlisted route for `method` and `path` (relative to the prefix, without query string,
 * still percent-encoded), or undefined. Matching is exact: no trailing slash, no case folding.
 */
export function matchRoute(method: string, path: string, routes: Compiled = compiledDashboard): RouteMatch | undefined {
  if (!path.startsWith('/')) return undefined;
  const parts = path.split('/').slice(1);
  for (const { route: candidate, segments } of routes) {
    if (candidate.method !== method || segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < segments.length && ok; i++) {
      const segment = segments[i]!;
      const part = parts[i]!;
      if ('literal' in segment) {
        ok = segment.literal === part;
      } else {
        const value = paramValue(part);
        if (value === undefined) ok = false;
        else params[segment.param] = value;
      }
    }
    if (ok) return { route: candidate, params };
  }
  return undefined;
}

/** A matcher for another list of routes (the session's routes). */
export const routeMatcher = (routes: readonly DashboardRoute[]) => {
  const compiled = compile(routes);
  return (method: string, path: string) => matchRoute(method, path, compiled);
};
