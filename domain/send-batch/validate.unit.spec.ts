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

  it('counts characters, not UTF-16 units, and refuses text no store can keep', () => {
    expect(errorOf({ ...valid, message: '😀'.repeat(10_000) })).toBeUndefined();
    expect(errorOf({ ...valid, message: '😀'.repeat(10_001) })).toBe('Message exceeds 10000 character limit');
    expect(errorOf({ ...valid, message: 'half \ud83d of an emoji' })).toBe('Message contains invalid characters');
    expect(errorOf({ ...valid, message: 'nul \u0000 byte' })).toBe('Message contains invalid characters');
    expect(errorOf({ ...valid, message: 'two\nlines\tand tabs' })).toBeUndefined();
  });

  it('caps contact and group ids at 256 characters on one line', () => {
    expect(errorOf({ ...valid, contactId: '+'.padEnd(256, '1') })).toBeUndefined();
    expect(errorOf({ ...valid, contactId: '+'.padEnd(257, '1') })).toBe('ContactId exceeds 256 character limit');
    expect(errorOf({ ...valid, contactId: '+1555\u0000' })).toBe('ContactId contains invalid characters');
    expect(errorOf({ ...valid, contactId: '+1555\n1' })).toBe('ContactId contains invalid characters');
    expect(errorOf({ ...valid, groupId: 'g'.repeat(257) })).toBe('GroupId exceeds 256 character limit');
    expect(errorOf({ ...valid, groupId: 'g\ud800' })).toBe('GroupId contains invalid characters');
    expect(errorOf({ ...valid, appId: 'a'.repeat(2_000_000) })).toBe('AppId not associated with this API key');
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
