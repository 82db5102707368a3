/**
 * The group administrator on the embedded store with the simulator's groups: a daemon that is away
 * holds requests back without failing them, and a replay after a crash changes nothing twice.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { groupDecider, groupStreamName } from '../../domain/group/decider.ts';
import { eventually } from '../../test/support/eventually.ts';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import { UnavailableError } from '../../infra/errors/unavailable.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import type { GroupAdministration, MessengerConnector } from '../../infra/messenger/port.ts';
import { SimulatorConnector } from '../../infra/messenger/simulator/simulator-connector.ts';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { createReadModels } from '../../projections/read-models.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { groupKeyOf, sealGroupField, type GroupKey } from '../commands/group-seal.ts';
import { startProjectionRunner } from '../read-models/runner.ts';
import type { ProjectionRunner } from '../services/projection-runner.ts';
import { startGroupAdministrator, type GroupAdministrator } from './group-administrator.ts';

const log = pino({ level: 'silent' });
const sealer = createMessageSealer(createSecretBox('66'.repeat(32)));
const BOT = '+15550009999';
const ALICE = '+15550100001';
const at = '2026-01-01T00:00:00.000Z';

describe('group administrator', () => {
  const closers: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  const setUp = async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-groups-'));
    const store: EventStore = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
    const simulator = new SimulatorStore(dir);
    closers.push(() => fs.rmSync(dir, { recursive: true, force: true }), () => store.close(), () => simulator.close());
    await store.appendToStream('app-app_1', [
      { type: 'AppCreated', data: { appId: 'app_1', userId: 'usr_1', createdAt: at, name: 'Bot', protocol: ['signal'], status: 'active', deliveryType: 'poll', webhookUrl: null, webhookAuthType: null, webhookAuthSecretEncrypted: null, webhookAuthHeaderName: null, apiKeyId: null } },
      { type: 'AppMessengerAdded', data: { appId: 'app_1', appMessengerId: 'am_1', messenger: 'signal', status: 'processing', addedAt: at } },
      { type: 'AppMessengerProvisioned', data: { appId: 'app_1', appMessengerId: 'am_1', address: BOT, provisionedAt: at } },
    ]);
    // Two more bots of their own apps, for the tests of several groups.
    for (const n of [2, 3]) {
      await store.appendToStream(`app-app_${n}`, [
        { type: 'AppCreated', data: { appId: `app_${n}`, userId: 'usr_1', createdAt: at, name: `Bot ${n}`, protocol: ['signal'], status: 'active', deliveryType: 'poll', webhookUrl: null, webhookAuthType: null, webhookAuthSecretEncrypted: null, webhookAuthHeaderName: null, apiKeyId: null } },
        { type: 'AppMessengerAdded', data: { appId: `app_${n}`, appMessengerId: `am_${n}`, messenger: 'signal', status: 'processing', addedAt: at } },
        { type: 'AppMessengerProvisioned', data: { appId: `app_${n}`, appMessengerId: `am_${n}`, address: `${BOT.slice(0, -1)}${n}`, provisionedAt: at } },
      ]);
    }
    const models = createReadModels();
    const runner: ProjectionRunner = await startProjectionRunner(store, models.all, log);
    closers.push(() => runner.stop());
    // The simulator's groups behind a switch that makes the daemon unreachable.
    const real = new SimulatorConnector('signal', simulator);
    const daemon = { down: false, calls: 0, lastGroupId: undefined as string | undefined };
    const guarded = <K extends keyof GroupAdministration>(name: K) =>
      (async (...args: unknown[]) => {
        daemon.calls++;
        if (name === 'members') daemon.lastGroupId = args[1] as string;
        if (daemon.down) throw new UnavailableError('signal-cli cannot be reached');
        return (real.groups[name] as (...a: unknown[]) => unknown)(...args);
      }) as GroupAdministration[K];
    const groups: GroupAdministration = {
      createGroup: guarded('createGroup'),
      addMember: guarded('addMember'),
      removeMember: guarded('removeMember'),
      setRole: guarded('setRole'),
      inviteLink: guarded('inviteLink'),
      members: guarded('members'),
    };
    const connectors = new Map<'signal', MessengerConnector>([['signal', { ...real, messenger: 'signal', deliver: real.deliver.bind(real), listen: real.listen.bind(real), close: real.close.bind(real), groups }]]);
    const start = async (sync: { syncIntervalMs?: number; syncPerSecond?: number } = {}): Promise<GroupAdministrator> => {
      const administrator = await startGroupAdministrator({ store, sealer, apps: models.apps, groups: models.groups, connectors, log, syncIntervalMs: 60_000, retryDelaysMs: [], ...sync });
      closers.push(() => administrator.stop());
      return administrator;
    };
    const request = async (requestId: string, contactId: string, n = 1) => {
      const [appId, appMessengerId] = [`app_${n}`, `am_${n}`];
      let key: GroupKey | undefined;
      const result = await handleCommand(
        store,
        groupStreamName(appMessengerId),
        groupDecider,
        async (state) => {
          key = await groupKeyOf(store.keys, sealer, state, appId, appMessengerId);
          return { type: 'RequestGroupChange' as const, data: { appId, appMessengerId, messenger: 'signal' as const, requestId, operation: 'add-member' as const, sealed: sealGroupField(sealer, key.raw, appMessengerId, 'contact', contactId), keyId: key.id, groupName: 'Bot', now: new Date() } };
        },
        { actor: 'test' },
        { keys: () => key?.changes },
      );
      expect(result.ok).toBe(true);
    };
    const types = async (n = 1) => (await store.readStream(groupStreamName(`am_${n}`))).events.map((e) => e.type);
    return { store, daemon, start, request, types, simulator };
  };

  it('holds a request back while the daemon is away, without failing it, and carries it out once it is back', async () => {
    const { daemon, start, request, types, simulator } = await setUp();
    daemon.down = true;
    await start();
    await request('r1', ALICE);
    await eventually(() => expect(daemon.calls).toBeGreaterThanOrEqual(2), 10_000);
    expect(await types()).toEqual(['GroupChangeRequested']);
    daemon.down = false;
    await eventually(async () => expect(await types()).toEqual(['GroupChangeRequested', 'GroupCreated', 'GroupMembersSynced', 'GroupMemberAdded']), 10_000);
    const [group] = simulator.groupsOwnedBy('signal', BOT);
    expect(simulator.groupMembers('signal', group!.groupId)).toEqual([{ contactId: ALICE, role: 'member' }]);
  });

  it('changes nothing twice when it replays its requests after a crash', async () => {
    const { store, start, request, types } = await setUp();
    const first = await start();
    await request('r1', ALICE);
    await first.catchUp();
    await eventually(async () => expect(await types()).toContain('GroupMemberAdded'), 10_000);
    const before = await types();
    await first.stop();
    await store.storeCheckpoint('groups.signal', 0n);
    const second = await start();
    await second.catchUp();
    expect(await types()).toEqual(before);
  });

  it('paces its periodic sync to syncPerSecond groups a second, whatever the interval (its cost does not grow with the groups)', async () => {
    const { daemon, start, request, types } = await setUp();
    await start({ syncIntervalMs: 20, syncPerSecond: 4 });
    await request('r1', ALICE);
    await eventually(async () => expect(await types()).toContain('GroupMemberAdded'), 10_000);
    const callsAt = daemon.calls;
    const from = Date.now();
    await eventually(() => expect(daemon.calls - callsAt).toBeGreaterThanOrEqual(3), 10_000);
    // One group, read at most 4 times a second (unpaced, an interval of 20 ms reads it about 50 times a second).
    expect(Date.now() - from).toBeGreaterThanOrEqual(2 * 250 - 50);
  });

  it("reads the keys of a second's groups in one query in its periodic sweep, not one a group", async () => {
    const { store, daemon, start, request, types } = await setUp();
    const keyReads: number[] = [];
    const get = store.keys.get.bind(store.keys);
    store.keys.get = async (ids, now) => {
      keyReads.push(ids.length);
      return get(ids, now);
    };
    await start({ syncIntervalMs: 20, syncPerSecond: 30 });
    for (const n of [1, 2, 3]) await request(`r${n}`, ALICE, n);
    for (const n of [1, 2, 3]) await eventually(async () => expect(await types(n)).toContain('GroupMemberAdded'), 10_000);
    const [readsAt, callsAt] = [keyReads.length, daemon.calls];
    await eventually(() => expect(daemon.calls - callsAt).toBeGreaterThanOrEqual(12), 10_000);
    const sweeps = keyReads.slice(readsAt);
    // Three groups a sweep: about one key read per three member reads, each read of all three keys.
    expect(sweeps.length).toBeLessThanOrEqual(Math.ceil((daemon.calls - callsAt) / 3) + 1);
    expect(sweeps.filter((n) => n === 3).length).toBeGreaterThanOrEqual(3);
  });

  it('does not seal nor decide again a member list the read model saw recorded; a changed list is recorded', async () => {
    const { store, daemon, start, request, types, simulator } = await setUp();
    const streamReads = { group: 0 };
    const readStream = store.readStream.bind(store);
    store.readStream = async (name) => {
      if (name === groupStreamName('am_1')) streamReads.group++;
      return readStream(name);
    };
    await start({ syncIntervalMs: 20, syncPerSecond: 50 });
    await request('r1', ALICE);
    await eventually(async () => expect(await types()).toContain('GroupMembersSynced'), 10_000);
    const readsAt = streamReads.group;
    const callsAt = daemon.calls;
    await eventually(() => expect(daemon.calls - callsAt).toBeGreaterThanOrEqual(5), 10_000);
    // Five syncs of an unchanged group: its stream was not read (a read model lags one sync at most).
    expect(streamReads.group - readsAt).toBeLessThanOrEqual(1);
    // A member who joined outside Relay: recorded by the next sync.
    simulator.putMember('signal', daemon.lastGroupId!, '+15550100002', 'member');
    await eventually(async () => expect(await types()).toContain('GroupMembersChanged'), 10_000);
  });
});
