import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const build = () => execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'ignore' });
const codeOf = (relay: RelayProcess) => /"msg":"relay started"/.test(relay.output()) && /"code":"(\w+)"/.exec(relay.output())?.[1];

/** bin/relay.js runs the JavaScript build in dist/ when it is current, the TypeScript sources otherwise. */
describe('the JavaScript build (scripts/build.mjs, bin/relay.js)', () => {
  const started: RelayProcess[] = [];
  const start = async (env: Record<string, string> = {}) => {
    const relay = await startRelayProcess({ env: { LOG_LEVEL: 'info', ...env } });
    started.push(relay);
    return relay;
  };
  afterEach(async () => {
    for (const relay of started.splice(0)) {
      await relay.stop();
      await relay.cleanup();
    }
  });

  it('runs the build when it is current, with the delivery pipeline thread started from it', async () => {
    build();
    const relay = await start();
    expect(codeOf(relay)).toBe('build');
    const health = await fetch(`${relay.url}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', version: JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version });
    // The pipeline thread provisions a new app's messengers: it runs, from the build too.
    const session = (await relay.cli(['session', 'create', '--email', 'build@example.com'])).stdout.trim();
    const headers = { cookie: `relay_session=${session}`, 'content-type': 'application/json' };
    const dash = `${relay.url}/dashboard/api/dashboard`;
    await fetch(`${dash}/apps`, { method: 'POST', headers, body: JSON.stringify({ name: 'b', protocol: ['signal'] }) });
    await expect
      .poll(async () => ((await (await fetch(`${dash}/apps`, { headers })).json()) as { items: Array<{ messengers: Array<{ status: string }> }> }).items[0]?.messengers[0]?.status, { timeout: 10_000 })
      .toBe('active');
  });

  it('runs the sources when told to, and when a source changed after the build unless told to run the build', async () => {
    build();
    expect(codeOf(await start({ RELAY_FROM_SOURCES: '1' }))).toBe('sources');
    const source = path.join(ROOT, 'apps/services/version.ts');
    const { atime, mtime } = fs.statSync(source);
    try {
      fs.utimesSync(source, atime, new Date(Date.now() + 1000));
      expect(codeOf(await start())).toBe('sources');
      // What the bench asks for: the build it made, whatever was edited since.
      expect(codeOf(await start({ RELAY_FROM_BUILD: '1' }))).toBe('build');
    } finally {
      fs.utimesSync(source, atime, mtime);
    }
    expect(codeOf(await start())).toBe('build');
  });
});
