/**
 * What `npm run monero:start` and `npm run litecoin:start` print is everything Relay needs to bill
 * on their private chains: pasted into a shell's environment, it is a configuration Relay accepts,
 * with billing on. Read through each script's `env` command (what `start` prints last) on a state
 * directory made here, so that no chain has to run.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../apps/services/config.ts';
import { ROOT } from '../support/relay-process.ts';

/** The environment without settings of Relay's own, as a new user's shell has it. */
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(PAYMENT_|BILLING_|MONERO_|BITCOIN_|LITECOIN_)/.test(key)));

/** The `KEY=VALUE` lines `script env` prints, as a shell's `set -a; eval …` would set them. */
const printedSettings = (script: string, env: NodeJS.ProcessEnv): Record<string, string> =>
  Object.fromEntries(
    execFileSync(path.join(ROOT, 'scripts', script), ['env'], { env, encoding: 'utf8' })
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );

describe('the private chains print what turns billing on', () => {
  const dirs: string[] = [];
  const stateDir = (files: Record<string, string>) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-chain-'));
    dirs.push(dir);
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('scripts/monero-local.sh: PAYMENT_PROCESSOR=monero, a BILLING_RATE and the merchant wallet', () => {
    const dir = stateDir({ 'merchant-rpc-login': 'relay:secret', 'merchant.env': 'MERCHANT_ADDRESS=4merchant\nMERCHANT_VIEW_KEY=view\n', 'customer.address': '4customer' });
    const printed = printedSettings('monero-local.sh', { ...cleanEnv(), MONERO_LOCAL_DIR: dir });
    const config = loadConfig({ ...printed, DATA_DIR: dir });
    expect(config.PAYMENT_PROCESSOR).toBe('monero');
    expect(config.BILLING_RATE).toBe('150');
    expect(config.MONERO_WALLET_RPC_URL).toBe('http://relay:secret@127.0.0.1:18192');
    expect(config.MONERO_NETWORK).toBe('regtest');
  });

  it('scripts/litecoin-local.sh: PAYMENT_PROCESSOR=bitcoin for LTC, a BILLING_RATE and the merchant wallet', () => {
    const dir = stateDir({ 'rpc-password': 'secret', 'customer.address': 'rltc1qcustomer' });
    const printed = printedSettings('litecoin-local.sh', { ...cleanEnv(), LITECOIN_LOCAL_DIR: dir });
    const config = loadConfig({ ...printed, DATA_DIR: dir });
    expect(config.PAYMENT_PROCESSOR).toBe('bitcoin');
    expect(config.BITCOIN_ASSET).toBe('LTC');
    expect(config.BITCOIN_NETWORK).toBe('regtest');
    expect(config.BILLING_RATE).toBe('150');
    expect(config.BITCOIN_RPC_URL).toBe('http://relay:secret@127.0.0.1:19491/wallet/merchant');
    // The test setup reads the same wallet under its own names.
    expect(printed.LITECOIN_RPC_URL).toBe(config.BITCOIN_RPC_URL);
  });

  it('print the operator’s own BILLING_RATE when one is set', () => {
    const dir = stateDir({ 'rpc-password': 'secret', 'customer.address': 'rltc1qcustomer' });
    expect(printedSettings('litecoin-local.sh', { ...cleanEnv(), LITECOIN_LOCAL_DIR: dir, BILLING_RATE: '92.5' }).BILLING_RATE).toBe('92.5');
  });
});
