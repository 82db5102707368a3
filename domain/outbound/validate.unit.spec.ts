import { describe, expect, it } from 'vitest';
import { SEND_ERRORS, validateSendItem } from './validate.ts';

const keyApps = ['app_1'];
const valid = { appId: 'app_1', contactId: '+15550001', messenger: 'signal', message: '  hello  ' };
const errorOf = (item: Record<string, string | undefined>) => {
  const result = validateSendItem(item, keyApps);
  return result.ok ? undefined : result.failure.error;
};

describe('send item validation', () => {
  it('accepts a valid item, trims the text and a group id', () => {
    expect(validateSendItem({ ...valid, groupId: ' g1 ' }, keyApps)).toEqual({
      ok: true,
      message: { appId: 'app_1', contactId: '+15550001', messenger: 'signal', text: 'hello', groupId: 'g1' },
    });
  });

  it('uses the exact error strings of the interface', () => {
    expect(errorOf({ ...valid, appId: '' })).toBe('Missing required field: appId');
    expect(errorOf({ ...valid, appId: undefined })).toBe('Missing required field: appId');
    expect(errorOf({ ...valid, contactId: ' ' })).toBe('Missing required field: contactId');
    expect(errorOf({ ...valid, message: '   ' })).toBe('Missing required field: message');
    expect(errorOf({ ...valid, message: 'x'.repeat(10_001) })).toBe('Message exceeds 10000 character limit');
    expect(errorOf({ ...valid, messenger: 'telegram' })).toBe('Invalid messenger. Must be one of: signal, simplex, session');
    expect(errorOf({ ...valid, appId: 'app_2' })).toBe('AppId not associated with this API key');
    expect(SEND_ERRORS.messageTooLong).toBe('Message exceeds 10000 character limit');
  });

  it('counts the limit after trimming', () => {
    expect(errorOf({ ...valid, message: `  ${'x'.repeat(10_000)}  ` })).toBeUndefined();
  });

  it('echoes the offending input', () => {
    expect(validateSendItem({ appId: 'app_2', contactId: 'c', messenger: 'simplex', message: 'm' }, keyApps)).toEqual({
      ok: false,
      failure: { appId: 'app_2', contactId: 'c', messenger: 'simplex', error: 'AppId not associated with this API key' },
    });
  });
});
