/**
 * The dashboard's API types (`dashboard/src/api/*.d.ts`) are what openapi-typescript makes of the
 * documents the code builds now: `scripts/generate-api-types.mjs --check` says so, and says which
 * file is stale when one is.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/relay-process.ts';

const SCRIPT = path.join(ROOT, 'scripts/generate-api-types.mjs');
const run = (args: string[]) =>
  promisify(execFile)(process.execPath, [SCRIPT, ...args], { cwd: ROOT }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );

describe('the generated API types of the dashboard', () => {
  it('are current: the committed files are what the documents the code builds give', async () => {
    const checked = await run(['--check']);
    expect(checked, checked.stderr).toMatchObject({ code: 0, stdout: 'The API types are current.\n' });
  }, 60_000);

  it('are told stale when one differs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-api-types-'));
    try {
      expect((await run(['--out', dir])).code).toBe(0);
      const account = path.join(dir, 'dashboard/src/api/account-api.d.ts');
      expect(fs.readFileSync(account, 'utf8')).toBe(fs.readFileSync(path.join(ROOT, 'dashboard/src/api/account-api.d.ts'), 'utf8'));
      fs.appendFileSync(account, '// edited by hand\n');
      const checked = await run(['--check', '--out', dir]);
      expect(checked.code).toBe(1);
      expect(checked.stderr).toBe('Not what the code builds now: dashboard/src/api/account-api.d.ts. Run: node scripts/generate-api-types.mjs\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
