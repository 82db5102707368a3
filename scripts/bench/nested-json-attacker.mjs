// Three anonymous clients sending a million nested `[` to the JSON routes until killed; prints what
// they were answered as JSON on SIGTERM. Run by scripts/bench/nested-json.ts in a process of its own,
// so that the sending does not slow the process that measures /health.
const [base] = process.argv.slice(2);
const NESTED = Buffer.from('['.repeat(1_000_000)); // encoded once: the sender's own work stays small
const TARGETS = ['/api/v1/messages/send', '/dashboard/auth/email', '/dashboard/api/dashboard/apps'];
const statuses = {};
let requests = 0;
let attacking = true;
const attacker = async (n) => {
  for (let i = n; attacking; i++) {
    try {
      const res = await fetch(`${base}${TARGETS[i % TARGETS.length]}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: NESTED });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    } catch {
      statuses.failed = (statuses.failed ?? 0) + 1;
    }
    requests++;
  }
};
const running = [0, 1, 2].map(attacker);
process.on('SIGTERM', async () => {
  attacking = false;
  await Promise.all(running);
  process.stdout.write(JSON.stringify({ requests, statuses }));
  process.exit(0);
});
