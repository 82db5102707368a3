import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { parseTrustProxy, trustProxyOption } from './trust-proxy.ts';
import { ConfigError, loadConfig } from './config.ts';

describe('TRUST_PROXY (issue 47: proxy hops)', () => {
  it('reads false, true as one hop, a number of hops, or the proxies’ addresses', () => {
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('true')).toBe(1);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('0')).toBe(false);
    expect(parseTrustProxy('10.0.0.1, 192.168.0.0/16,loopback,::1,fd00::/8')).toEqual(['10.0.0.1', '192.168.0.0/16', 'loopback', '::1', 'fd00::/8']);
    for (const bad of ['yes', '10.0.0.256', '10.0.0.0/33', 'proxy.example', '', '1,', '-1', '1.5']) expect(parseTrustProxy(bad), bad).toBeUndefined();
  });

  it('is refused at start-up in one line when it is none of them', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(1);
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    expect(() => loadConfig({ TRUST_PROXY: 'all' })).toThrow(ConfigError);
    expect(() => loadConfig({ TRUST_PROXY: 'all' })).toThrow('Invalid configuration TRUST_PROXY="all": must be false, true (one proxy), a number of proxies, or their comma-separated addresses or networks');
  });

  it('with true, a client cannot pick its own address by sending X-Forwarded-For', async () => {
    const app = Fastify({ trustProxy: trustProxyOption(loadConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY) });
    app.get('/', async (request) => ({ ip: request.ip, protocol: request.protocol }));
    const res = await app.inject({ url: '/', remoteAddress: '10.0.0.2', headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.9', 'x-forwarded-proto': 'https' } });
    expect(res.json()).toEqual({ ip: '203.0.113.9', protocol: 'https' });
    const two = Fastify({ trustProxy: trustProxyOption(loadConfig({ TRUST_PROXY: '2' }).TRUST_PROXY) });
    two.get('/', async (request) => ({ ip: request.ip }));
    expect((await two.inject({ url: '/', remoteAddress: '10.0.0.2', headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.9, 10.0.0.3' } })).json()).toEqual({ ip: '203.0.113.9' });
    const listed = Fastify({ trustProxy: trustProxyOption(loadConfig({ TRUST_PROXY: '10.0.0.0/8' }).TRUST_PROXY) });
    listed.get('/', async (request) => ({ ip: request.ip }));
    expect((await listed.inject({ url: '/', remoteAddress: '10.0.0.2', headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.9, 10.0.0.3' } })).json()).toEqual({ ip: '203.0.113.9' });
    // Not from a listed proxy: its X-Forwarded-For is not believed.
    expect((await listed.inject({ url: '/', remoteAddress: '192.0.2.7', headers: { 'x-forwarded-for': '1.2.3.4' } })).json()).toEqual({ ip: '192.0.2.7' });
    await Promise.all([app.close(), two.close(), listed.close()]);
  });
});
