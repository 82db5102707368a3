/**
 * The hostile-mix step of `npm run bench` (issue 23, item 8): a Relay of its own (embedded default,
 * webhooks to local receivers allowed) takes, for `seconds`, what the second outside review threw at
 * one: bodies of a million nested `[` from three anonymous clients, 40 event streams of four accounts
 * that never read (while those accounts send, so that their streams have events to queue), group
 * changes as fast as the limits let them, sign-in attempts, and webhooks to receivers that drip.
 * Reported: RSS before, right after and a minute later (as the process has it: no collection forced
 * before it is read), and each thread's heap after a forced collection (through the inspector). Targets: ≤ 250 MB after, back within 20 % of the start a minute later.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, ROOT, runCli } from '../../test/support/relay-process.ts';
import { collectAndMeasure } from './inspector.ts';
import { memoryMaps, rssMb } from './measures.ts';

export interface HostileMixFigures {
  readonly rssStartMb: number;
  readonly rssAfterMb: number;
  readonly heapAfterMb: number[];
  /** Per thread (main first), what holds most of its heap a minute after the mix (heap snapshots, taken last: a snapshot's own memory shows in RSS). */
  readonly largestLater: Array<Array<{ readonly kind: string; readonly mb: number }>>;
  /** Where the RSS after the mix is (/proc/<pid>/smaps). */
  readonly mapsAfter: ReturnType<typeof memoryMaps>;
  readonly rssMinuteLaterMb: number;
  readonly heapMinuteLaterMb: number[];
  readonly requests: Record<string, number>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const measureHostileMix = async (seconds: number): Promise<HostileMixFigures> => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-bench-mix-'));
  const port = await freePort();
  const inspectorPort = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', WEBHOOK_ALLOW_LOCAL: 'true', WEBHOOK_TIMEOUT_MS: '3000' };
  const relay = spawn(process.execPath, [`--inspect=127.0.0.1:${inspectorPort}`, 'bin/relay.js', 'start'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'ignore'] });
  const dripping = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200);
    const timer = setInterval(() => res.write('.'), 1000);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => dripping.listen(0, '127.0.0.1', resolve));
  const drippingUrl = `http://127.0.0.1:${(dripping.address() as net.AddressInfo).port}/hook`;
  const requests: Record<string, number> = {};
  const count = (what: string) => (requests[what] = (requests[what] ?? 0) + 1);
  const sockets: net.Socket[] = [];
  try {
    for (let i = 0; ; i++) {
      if ((await fetch(`${base}/api/v1/health`).catch(() => undefined))?.status === 200) break;
      if (i > 600) throw new Error('hostile mix: Relay did not start');
      await sleep(50);
    }
    const accounts = await Promise.all(
      [0, 1, 2, 3].map(async (n) => {
        const session = (await runCli(['session', 'create', '--email', `hostile${n}@example.com`], env)).stdout.trim();
        const headers = { cookie: `relay_session=${session}`, 'content-type': 'application/json' };
        const dash = `${base}/dashboard/api/dashboard`;
        const app = (await (await fetch(`${dash}/apps`, { method: 'POST', headers, body: JSON.stringify({ name: `hostile ${n}`, protocol: ['signal'] }) })).json()) as { id: string; messengers: Array<{ id: string }> };
        const keys: string[] = [];
        for (let k = 0; k < 10; k++)
          keys.push(((await (await fetch(`${dash}/credentials`, { method: 'POST', headers, body: JSON.stringify({ type: 'api-key', appIds: [app.id], name: `k${k}` }) })).json()) as { secret: string }).secret);
        return { n, headers, dash, app, keys };
      }),
    );
    // Webhook apps of the first account, each with a message queued for a receiver that drips.
    const first = accounts[0]!;
    for (let w = 0; w < 8; w++) {
      const app = (await (await fetch(`${first.dash}/apps`, { method: 'POST', headers: first.headers, body: JSON.stringify({ name: `drip ${w}`, protocol: ['signal'], deliveryType: 'webhook', webhookUrl: drippingUrl }) })).json()) as { id: string };
      await runCli(['simulate', 'inbound', '--app', app.id, '--messenger', 'signal', '--contact', '+15550001', '--text', 'drip', '--count', '20'], env);
    }
    await sleep(2000);
    const rssStartMb = rssMb(relay.pid!);

    const until = Date.now() + seconds * 1000;
    const running = () => Date.now() < until;
    const attacker = spawn(process.execPath, [fileURLToPath(new URL('./nested-json-attacker.mjs', import.meta.url)), base], { stdio: ['ignore', 'ignore', 'inherit'] });
    // Event streams that never read: their events queue in Relay up to each stream's bound.
    for (const account of accounts)
      for (const key of account.keys) {
        const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`));
        socket.on('error', () => undefined);
        socket.pause();
        sockets.push(socket);
        count('event streams');
      }
    const loops = [
      // Each account sends, so that its streams have events to queue.
      ...accounts.map(async (account) => {
        const body = JSON.stringify({ messages: Array.from({ length: 50 }, (_, i) => ({ appId: account.app.id, messenger: 'signal', contactId: '+15550002', message: `mix ${i} `.padEnd(500, 'm') })) });
        while (running()) {
          const res = await fetch(`${base}/api/v1/messages/send`, { method: 'POST', headers: { authorization: `Bearer ${account.keys[0]}`, 'content-type': 'application/json' }, body });
          await res.arrayBuffer();
          count(`send ${res.status}`);
          await sleep(100);
        }
      }),
      // Group changes as fast as the limits let them.
      ...accounts.map(async (account) => {
        for (let i = 0; running(); i++) {
          const res = await fetch(`${account.dash}/group/members/add`, { method: 'POST', headers: account.headers, body: JSON.stringify({ appMessengerId: account.app.messengers[0]!.id, contactId: `+1555${String(1_000_000 + i)}` }) });
          await res.arrayBuffer();
          count(`group ${res.status}`);
        }
      }),
      // Sign-in attempts from anyone.
      (async () => {
        for (let i = 0; running(); i++) {
          const res = await fetch(`${base}/dashboard/auth/email`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `someone${i}@example.com` }) });
          await res.arrayBuffer();
          count(`sign-in ${res.status}`);
        }
      })(),
    ];
    await Promise.all(loops);
    attacker.kill('SIGTERM');
    for (const socket of sockets) socket.destroy();
    await sleep(1000);
    // RSS as the process has it (no collection forced), then the heaps after a forced one.
    const rssAfterMb = rssMb(relay.pid!);
    const mapsAfter = memoryMaps(relay.pid!);
    const after = await collectAndMeasure(inspectorPort);
    await sleep(60_000);
    const rssMinuteLaterMb = rssMb(relay.pid!);
    const later = await collectAndMeasure(inspectorPort, { snapshots: true });
    return { rssStartMb, rssAfterMb, heapAfterMb: after.usedMb, largestLater: later.largest ?? [], mapsAfter, rssMinuteLaterMb, heapMinuteLaterMb: later.usedMb, requests };
  } finally {
    for (const socket of sockets) socket.destroy();
    relay.kill('SIGTERM');
    await new Promise((resolve) => relay.once('exit', resolve));
    dripping.closeAllConnections();
    dripping.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
};
