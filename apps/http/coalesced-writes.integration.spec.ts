import net, { type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { coalescedWrites, type CoalescedWrites } from './coalesced-writes.ts';
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

/** A request listener that answers `text` on `socket` at once. */
const answer = (writes: CoalescedWrites, socket: Socket, text: string) => writes.during((s: Socket, t: string) => void s.write(t), socket, text);

/** `count` connections whose accepted sockets write through one coalescer. */
const coalescing = async (count: number, options?: { maxHeld: number }) => {
  open = await connected(count);
  const writes = coalescedWrites(options);
  open.accepted.forEach(writes.attach);
  const { accepted, sent, received } = open;
  return { writes, accepted, sent, received };
};

let open: Awaited<ReturnType<typeof connected>> | undefined;
afterEach(async () => {
  if (!open) return;
  for (const socket of [...open.accepted, ...open.clients]) socket.destroy();
  await new Promise((resolve) => open!.server.close(resolve));
  open = undefined;
});

describe('coalesced writes', () => {
  it('sends the first answer of a turn at once and holds the others to the end of the turn', async () => {
    const { writes, accepted, sent, received } = await coalescing(3);
    for (const [i, socket] of accepted.entries()) answer(writes, socket, `answer ${i}`);
    expect(sent).toEqual([1, 0, 0]);
    await endOfTurn();
    expect(sent).toEqual([1, 1, 1]);
    await waitFor(() => received.join('|') === 'answer 0|answer 1|answer 2', 5_000, 'every answer');
    // The next turn starts afresh: its first answer goes out at once again.
    answer(writes, accepted[2]!, ' again');
    expect(sent).toEqual([1, 1, 2]);
  });

  it('sends at once what is written outside a request listener (after a commit, an event stream)', async () => {
    const { accepted, sent, received } = await coalescing(2);
    accepted[0]!.write('later answer');
    accepted[1]!.write('another');
    expect(sent).toEqual([1, 1]);
    await waitFor(() => received.join('|') === 'later answer|another', 5_000, 'both answers');
  });

  it("keeps a socket's bytes in order: a write behind a held one waits for it", async () => {
    const { writes, accepted, sent, received } = await coalescing(2);
    const [first, socket] = accepted as [Socket, Socket];
    answer(writes, first, 'first of the turn');
    writes.during((s: Socket, text: string) => {
      s.write(text);
      s.write('two ');
    }, socket, 'one ');
    socket.write('three');
    expect(sent).toEqual([1, 0]);
    await waitFor(() => received[1] === 'one two three', 5_000, 'the three writes in order');
  });

  it('sends the held writes at once when a batch reaches its bound', async () => {
    const { writes, accepted, sent } = await coalescing(4, { maxHeld: 2 });
    writes.during((sockets: Socket[], _: undefined) => {
      sockets[0]!.write('a');
      sockets[1]!.write('b');
      expect(sent).toEqual([1, 0, 0, 0]);
      sockets[2]!.write('c');
      expect(sent).toEqual([1, 1, 1, 0]);
      sockets[3]!.write('d');
    }, accepted, undefined);
    expect(sent).toEqual([1, 1, 1, 0]);
    await endOfTurn();
    expect(sent).toEqual([1, 1, 1, 1]);
  });

  it('a socket closed before the end of the turn has its held write refused, as Node refuses a write to a closed socket', async () => {
    const { writes, accepted, sent } = await coalescing(2);
    const [first, closing] = accepted as [Socket, Socket];
    answer(writes, first, 'first of the turn');
    const outcome = new Promise<unknown>((resolve) => {
      writes.during((s: Socket, _: undefined) => void s.write('never sent', (error) => resolve(error)), closing, undefined);
    });
    closing.destroy();
    await endOfTurn();
    expect(await outcome).toMatchObject({ code: 'ERR_SOCKET_CLOSED' });
    expect(sent).toEqual([1, 0]);
  });

  it('stays holding through a nested request listener and stops after the outer one', async () => {
    const { writes, accepted, sent } = await coalescing(3);
    writes.during((sockets: Socket[], _: undefined) => {
      sockets[0]!.write('first of the turn');
      writes.during(() => undefined, undefined, undefined);
      sockets[1]!.write('held');
    }, accepted, undefined);
    accepted[2]!.write('outside');
    expect(sent).toEqual([1, 0, 1]);
    await endOfTurn();
    expect(sent).toEqual([1, 1, 1]);
  });
});
