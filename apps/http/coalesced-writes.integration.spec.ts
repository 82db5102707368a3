import net, { type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { coalescedWrites } from './coalesced-writes.ts';
import { waitFor } from '../../test/support/wait-for.ts';

/** A loopback server whose accepted sockets count the writes that reach their handle (the kernel). */
const connected = async (count: number) => {
  const accepted: Socket[] = [];
  const server = net.createServer((socket) => accepted.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const clients = await Promise.all(
    Array.from({ length: count }, () => new Promise<Socket>((resolve) => { const c = net.connect(port, '127.0.0.1', () => resolve(c)); })),
  );
  await waitFor(() => accepted.length === count, 5_000, 'the server to accept every connection', 1);
  const received = clients.map(() => '');
  clients.forEach((client, i) => client.on('data', (data: Buffer) => (received[i] += data.toString())));
  const sent = accepted.map(() => 0);
  accepted.forEach((socket, i) => {
    const handle = (socket as unknown as { _handle: Record<string, (...args: unknown[]) => unknown> })._handle;
    for (const name of ['writev', 'writeUtf8String', 'writeLatin1String', 'writeBuffer']) {
      const original = handle[name]!;
      handle[name] = (...args: unknown[]) => {
        sent[i]! += 1;
        return original.apply(handle, args);
      };
    }
  });
  return { server, accepted, clients, received, sent };
};

const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

let open: Awaited<ReturnType<typeof connected>> | undefined;
afterEach(async () => {
  if (!open) return;
  for (const socket of [...open.accepted, ...open.clients]) socket.destroy();
  await new Promise((resolve) => open!.server.close(resolve));
  open = undefined;
});

describe('coalesced writes', () => {
  it('holds what a request listener writes until the end of the turn, then sends each socket its bytes', async () => {
    open = await connected(2);
    const writes = coalescedWrites();
    open.accepted.forEach(writes.attach);
    writes.during((a: Socket, b: Socket) => {
      a.write('answer a');
      b.write('answer b');
    }, open.accepted[0]!, open.accepted[1]!);
    expect(open.sent).toEqual([0, 0]);
    await endOfTurn();
    expect(open.sent).toEqual([1, 1]);
    await waitFor(() => open!.received.join('|') === 'answer a|answer b', 5_000, 'both answers');
  });

  it('sends at once what is written outside a request listener (after a commit, an event stream)', async () => {
    open = await connected(1);
    const writes = coalescedWrites();
    writes.attach(open.accepted[0]!);
    open.accepted[0]!.write('later answer');
    expect(open.sent).toEqual([1]);
    await waitFor(() => open!.received[0] === 'later answer', 5_000, 'the answer');
  });

  it("keeps a socket's bytes in order: a write behind a held one waits for it", async () => {
    open = await connected(1);
    const writes = coalescedWrites();
    const socket = open.accepted[0]!;
    writes.attach(socket);
    writes.during((s: Socket, text: string) => {
      s.write(text);
      s.write('two ');
    }, socket, 'one ');
    socket.write('three');
    expect(open.sent).toEqual([0]);
    await waitFor(() => open!.received[0] === 'one two three', 5_000, 'the three writes in order');
  });

  it('sends the held writes at once when a batch reaches its bound', async () => {
    open = await connected(3);
    const writes = coalescedWrites({ maxHeld: 2 });
    open.accepted.forEach(writes.attach);
    writes.during((sockets: Socket[], _: undefined) => {
      sockets[0]!.write('a');
      expect(open!.sent).toEqual([0, 0, 0]);
      sockets[1]!.write('b');
      expect(open!.sent).toEqual([1, 1, 0]);
      sockets[2]!.write('c');
    }, open.accepted, undefined);
    expect(open.sent).toEqual([1, 1, 0]);
    await endOfTurn();
    expect(open.sent).toEqual([1, 1, 1]);
  });

  it('a socket closed before the end of the turn has its held write refused, as Node refuses a write to a closed socket', async () => {
    open = await connected(1);
    const writes = coalescedWrites();
    const socket = open.accepted[0]!;
    writes.attach(socket);
    const outcome = new Promise<unknown>((resolve) => {
      writes.during((s: Socket, _: undefined) => void s.write('never sent', (error) => resolve(error)), socket, undefined);
    });
    socket.destroy();
    await endOfTurn();
    expect(await outcome).toMatchObject({ code: 'ERR_SOCKET_CLOSED' });
    expect(open.sent).toEqual([0]);
  });

  it('stays holding through a nested request listener and stops after the outer one', async () => {
    open = await connected(1);
    const writes = coalescedWrites();
    const socket = open.accepted[0]!;
    writes.attach(socket);
    writes.during((s: Socket, _: undefined) => {
      writes.during(() => undefined, undefined, undefined);
      s.write('held');
    }, socket, undefined);
    expect(open.sent).toEqual([0]);
    await endOfTurn();
    expect(open.sent).toEqual([1]);
  });
});
