// The anchor of the benchmark: a bare Fastify server with the two routes a relay route is
// compared with, started as its own process like Relay, as plain JavaScript like Relay's build.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/health', async () => ({ status: 'ok', version: '0.0.0' }));
// The same answer with the four security headers the interface requires on every answer of Relay's
// (values as Relay sends them): how much of health's ratio is those headers' cost.
const securityHeaders = {
  'Strict-Transport-Security': 'max-age=15552000; includeSubDomains',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'SAMEORIGIN',
  'X-XSS-Protection': '0',
};
app.get('/health-with-headers', async (_request, reply) => {
  reply.headers(securityHeaders);
  return { status: 'ok', version: '0.0.0' };
});
app.post('/echo', async (request) => ({ received: request.body.messages?.length ?? 0 }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
