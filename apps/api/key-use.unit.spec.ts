import { describe, expect, it } from 'vitest';
import type { CredentialView } from '../../projections/credentials/credentials-projection.ts';
import { KeyUseNotes } from './key-use.ts';

const HOUR = 3_600_000;
const key = (credentialId: string, lastUsedAt?: string) => ({ credentialId, ...(lastUsedAt ? { lastUsedAt } : {}) }) as CredentialView;

const notes = (outcome: () => Promise<void> = async () => {}) => {
  const asked: Array<[string, string]> = [];
  const failures: string[] = [];
  const recorder = new KeyUseNotes(
    (id, at) => {
      asked.push([id, at.toISOString()]);
      return outcome();
    },
    (_error, id) => failures.push(id),
  );
  return { recorder, asked, failures };
};

describe('a key’s last use, noted in memory', () => {
  const t0 = Date.parse('2026-01-01T00:00:00.000Z');

  it('asks for a record at the first use, then not again for an hour, for each key', () => {
    const { recorder, asked } = notes();
    for (let i = 0; i < 1000; i++) recorder.note(key('cred_1'), t0 + i * 1000);
    recorder.note(key('cred_2'), t0 + 5);
    recorder.note(key('cred_1'), t0 + HOUR);
    expect(asked).toEqual([
      ['cred_1', '2026-01-01T00:00:00.000Z'],
      ['cred_2', '2026-01-01T00:00:00.005Z'],
      ['cred_1', '2026-01-01T01:00:00.000Z'],
    ]);
  });

  it('asks nothing while the read model shows a use of the hour (another instance’s)', () => {
    const { recorder, asked } = notes();
    recorder.note(key('cred_1', '2026-01-01T00:30:00.000Z'), t0 + HOUR);
    recorder.note(key('cred_1'), t0 + HOUR + 1000);
    expect(asked).toEqual([]);
    recorder.note(key('cred_1', '2026-01-01T00:30:00.000Z'), t0 + 1.5 * HOUR);
    expect(asked).toEqual([['cred_1', '2026-01-01T01:30:00.000Z']]);
  });

  it('after a failed record, asks again a minute later, not at every request', async () => {
    const { recorder, asked, failures } = notes(async () => {
      throw new Error('store down');
    });
    recorder.note(key('cred_1'), t0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(failures).toEqual(['cred_1']);
    recorder.note(key('cred_1'), t0 + 59_000);
    recorder.note(key('cred_1'), t0 + 60_000);
    expect(asked.map(([, at]) => at)).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T00:01:00.000Z']);
  });

  it('forgets notes older than the hour when it holds many', () => {
    const { recorder } = notes();
    for (let i = 0; i < 10_000; i++) recorder.note(key(`old_${i}`), t0);
    recorder.note(key('cred_new'), t0 + HOUR);
    expect(recorder.size).toBe(1);
  });
});
