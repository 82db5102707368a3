/**
 * The population of the scale bench (issue 49), decided up front and deterministic: who owns which
 * app, which apps are delivered by webhook, have a group, have messages waiting, or have traffic in
 * the history. The sizes are those of the largest measurement point; a smaller point holds the
 * users below it with everything they own, so each point is a prefix of the next.
 *
 * User 0 is the probe: the one user of the first point, with 25 apps on the three messengers and
 * two API keys (one app, all 25 apps) that the request loads use. Its apps never receive anything,
 * so its polls are empty at every size. Everything else is spread over users 1…N-1 in proportion.
 */

export interface ScaleSizes {
  readonly users: number;
  readonly apps: number;
  readonly credentials: number;
  readonly groups: number;
  readonly webhookApps: number;
  readonly waitingMessages: number;
  readonly waitingApps: number;
  /** The history's size in events at the largest point (population and waiting messages included). */
  readonly events: number;
}

export const DEFAULT_SIZES: ScaleSizes = {
  users: 10_000,
  apps: 25_000,
  credentials: 50_000,
  groups: 5_000,
  webhookApps: 2_000,
  waitingMessages: 1_000_000,
  waitingApps: 5_000,
  events: 10_000_000,
};

export const DEFAULT_POINTS = [1, 100, 1_000, 10_000];

export const PROBE_APPS = 25;
/** The probe's keys: one for its first app, one for all its apps. */
export const PROBE_CREDENTIALS = 2;
/** Share of the other apps that have traffic in the history (the webhook and waiting ones among them). */
const ACTIVE_SHARE = 0.4;

export interface AppPlan {
  /** Index among all apps (0…apps-1; the probe's are 0…24). */
  readonly index: number;
  readonly owner: number;
  readonly webhook: boolean;
  /** The messenger whose app-messenger has a group, if any. */
  readonly group: 'signal' | 'simplex' | 'session' | undefined;
  /** Inbound messages waiting for a poll. */
  readonly waiting: number;
  /** Has traffic in the history. */
  readonly active: boolean;
}

export interface UserPlan {
  readonly index: number;
  /** Indexes of its apps. */
  readonly apps: readonly number[];
  readonly credentials: number;
}

/** Deterministic pseudo-random numbers (mulberry32), so that two runs build the same population. */
export const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const shuffled = (n: number, random: () => number): number[] => {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
};

/** `count` spread over `n` slots as evenly as whole numbers allow: how many slot `i` gets. */
const share = (i: number, count: number, n: number) => Math.floor(((i + 1) * count) / n) - Math.floor((i * count) / n);

export class ScalePlan {
  readonly apps: AppPlan[] = [];
  readonly users: UserPlan[] = [];

  constructor(readonly sizes: ScaleSizes) {
    const others = sizes.users - 1;
    const otherApps = sizes.apps - PROBE_APPS;
    if (sizes.users < 1 || otherApps < 0 || (others === 0 && otherApps > 0)) throw new Error('scale: need at least the probe user, and users for the apps beyond its 25');
    if (others > 0 && otherApps < others) throw new Error('scale: every user but the probe needs an app (--apps ≥ 25 + users - 1)');
    if (others > 0 && Math.ceil(otherApps / others) > 25) throw new Error('scale: at most 25 apps per user (MAX_APPS_PER_USER)');
    if (sizes.webhookApps + sizes.waitingApps > otherApps) throw new Error('scale: webhook and waiting apps must be distinct apps of users other than the probe');
    const random = seeded(49);
    const order = shuffled(otherApps, random);
    const role = new Array<'webhook' | 'waiting' | 'active' | 'quiet'>(otherApps).fill('quiet');
    const activeCount = Math.max(sizes.webhookApps + sizes.waitingApps, Math.round(otherApps * ACTIVE_SHARE));
    order.forEach((app, rank) => {
      role[app] = rank < sizes.webhookApps ? 'webhook' : rank < sizes.webhookApps + sizes.waitingApps ? 'waiting' : rank < activeCount ? 'active' : 'quiet';
    });
    const groupOrder = shuffled(otherApps, random);
    const grouped = new Set(groupOrder.slice(0, Math.min(sizes.groups, otherApps)));
    const messengers = ['signal', 'simplex', 'session'] as const;
    let waitingRank = 0;
    for (let i = 0; i < PROBE_APPS; i++) this.apps.push({ index: i, owner: 0, webhook: false, group: undefined, waiting: 0, active: false });
    for (let j = 0; j < otherApps; j++) {
      const r = role[j]!;
      this.apps.push({
        index: PROBE_APPS + j,
        // Contiguous runs of apps per user: the apps of users below a point are a prefix.
        owner: 1 + Math.floor((j * others) / otherApps),
        webhook: r === 'webhook',
        group: grouped.has(j) ? messengers[j % 3] : undefined,
        waiting: r === 'waiting' ? share(waitingRank++, sizes.waitingMessages, sizes.waitingApps) : 0,
        active: r !== 'quiet',
      });
    }
    const appsOf: number[][] = Array.from({ length: sizes.users }, () => []);
    for (const app of this.apps) appsOf[app.owner]!.push(app.index);
    const otherCredentials = Math.max(0, sizes.credentials - PROBE_CREDENTIALS);
    for (let u = 0; u < sizes.users; u++)
      this.users.push({ index: u, apps: appsOf[u]!, credentials: u === 0 ? PROBE_CREDENTIALS : Math.min(10, Math.max(1, share(u - 1, otherCredentials, others))) });
  }

  /** The users of a point: 0…users-1. */
  usersAt(users: number): UserPlan[] {
    return this.users.slice(0, users);
  }

  /** What a point holds, counted from the plan. */
  countsAt(users: number) {
    const apps = this.usersAt(users).flatMap((u) => u.apps.map((a) => this.apps[a]!));
    return {
      users,
      apps: apps.length,
      credentials: this.usersAt(users).reduce((n, u) => n + u.credentials, 0),
      groups: apps.filter((a) => a.group).length,
      webhookApps: apps.filter((a) => a.webhook).length,
      waitingApps: apps.filter((a) => a.waiting > 0).length,
      waitingMessages: apps.reduce((n, a) => n + a.waiting, 0),
      /** The history's size the point aims at, in proportion to its other users. */
      events: this.sizes.users <= 1 ? 0 : Math.floor((this.sizes.events * (users - 1)) / (this.sizes.users - 1)),
    };
  }
}
