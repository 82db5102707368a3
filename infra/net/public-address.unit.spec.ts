import { describe, expect, it } from 'vitest';
import { isPublicAddress, webhookUrlProblem } from './public-address.ts';

describe('public addresses', () => {
  it('refuses loopback, private, link-local, shared, multicast and documentation ranges', () => {
    for (const address of [
      '127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
      '255.255.255.255', '192.0.2.10', '198.18.0.1', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1',
      '::ffff:10.0.0.1', '::ffff:7f00:1', '2001:db8::1', '64:ff9b::a00:1', '2002:a00:1::1',
    ]) expect(isPublicAddress(address), address).toBe(false);
  });

  it('accepts public unicast addresses', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPublicAddress(address), address).toBe(true);
  });
});

describe('webhook URLs', () => {
  const strict = { allowLocal: false };
  it('accept an https URL of a public host', () => {
    expect(webhookUrlProblem('https://hooks.example.com/relay?x=1', strict)).toBeUndefined();
    expect(webhookUrlProblem('https://8.8.8.8:8443/hook', strict)).toBeUndefined();
  });

  it('refuse plain http, user info, local names and non-public addresses', () => {
    expect(webhookUrlProblem('http://hooks.example.com/', strict)).toBe('must use https (an operator allows http with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('ftp://hooks.example.com/', strict)).toBe('must use https (an operator allows http with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('https://user:pw@hooks.example.com/', strict)).toBe('must not carry a user name or password');
    expect(webhookUrlProblem('https://localhost/', strict)).toBe('must not point to a local host name (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('https://printer.local/', strict)).toBe('must not point to a local host name (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('https://intranet/', strict)).toBe('must not point to a local host name (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('https://127.0.0.1/', strict)).toBe('must not point to a loopback, private or link-local address (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('https://[::1]/', strict)).toBe('must not point to a loopback, private or link-local address (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('https://169.254.169.254/latest', strict)).toBe('must not point to a loopback, private or link-local address (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('https://2130706433/', strict)).toBe('must not point to a loopback, private or link-local address (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)'); // 127.0.0.1 as one number
    expect(webhookUrlProblem('not a url', strict)).toBe('must be an absolute URL');
  });

  it('judge a name with its trailing dot as the same name, and an IPv4-translated IPv6 address as its IPv4 address (issue 23, item 6)', () => {
    for (const url of ['https://localhost./', 'https://vm./', 'https://a.b.internal./', 'https://printer.local../'])
      expect(webhookUrlProblem(url, strict), url).toBe('must not point to a local host name (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)');
    for (const url of ['https://[::ffff:0:7f00:1]/', 'https://[::ffff:0:a00:1]/', 'https://[::ffff:127.0.0.1]/', 'https://[::7f00:1]/'])
      expect(webhookUrlProblem(url, strict), url).toBe('must not point to a loopback, private or link-local address (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)');
    expect(webhookUrlProblem('https://hooks.example.com./', strict)).toBeUndefined();
    expect(webhookUrlProblem('https://[::ffff:0:808:808]/', strict)).toBeUndefined();
  });

  it('an operator may allow local targets (tests, a receiver on the same host)', () => {
    expect(webhookUrlProblem('http://127.0.0.1:9000/hook', { allowLocal: true })).toBeUndefined();
    expect(webhookUrlProblem('http://user:pw@127.0.0.1/', { allowLocal: true })).toBe('must not carry a user name or password');
  });
});
