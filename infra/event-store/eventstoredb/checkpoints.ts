import { randomUUID } from 'node:crypto';
import { END, type EventData, type EventStoreDBClient, type JSONType } from '@eventstore/db-client';
import {
  CHECKPOINT_EVENT,
  CHECKPOINT_NAMED_EVENT,
  CHECKPOINT_REGISTRY_STREAM,
  checkpointStream,
  parsePosition,
  type StreamNames,
} from './mapping.ts';
import type { StreamReads } from './stream-reads.ts';

/**
 * Named checkpoints on ESDB: one stream per name (`@relay-checkpoint-<name>`, maxCount 1, its last
 * event holds the position) plus a registry stream listing the names (`@relay-checkpoints`), both
 * inside the namespace.
 */
export const createCheckpoints = (client: EventStoreDBClient, names: StreamNames, streams: StreamReads) => {
  const registered = new Set<string>();

  const readRegistry = async (): Promise<Set<string>> => {
    const found = new Set<string>();
    for (const event of await streams.all(names.qualify(CHECKPOINT_REGISTRY_STREAM))) {
      const name = (event.data as { name?: unknown } | null)?.name;
      if (typeof name === 'string') found.add(name);
    }
    return found;
  };

  const read = async (name: string): Promise<bigint | undefined> => {
    const event = await streams.one(names.qualify(checkpointStream(name)), END);
    return event === undefined ? undefined : parsePosition((event.data as { position?: unknown } | null)?.position);
  };

  const jsonEvent = (type: string, data: unknown): EventData => ({
    id: randomUUID(),
    contentType: 'application/json',
    type,
    data: data as JSONType,
    metadata: undefined,
  });

  return {
    read,
    async store(name: string, position: bigint): Promise<void> {
      if (!registered.has(name)) {
        if (!(await readRegistry()).has(name)) {
          await client.appendToStream(names.qualify(CHECKPOINT_REGISTRY_STREAM), [jsonEvent(CHECKPOINT_NAMED_EVENT, { name })]);
        }
        registered.add(name);
      }
      const streamId = names.qualify(checkpointStream(name));
      const { nextExpectedRevision } = await client.appendToStream(streamId, [jsonEvent(CHECKPOINT_EVENT, { position: String(position) })]);
      // Only the last position matters: let scavenges drop the older ones.
      if (nextExpectedRevision === 0n) await client.setStreamMetadata(streamId, { maxCount: 1 });
    },
    async list(): Promise<Map<string, bigint>> {
      const checkpoints = new Map<string, bigint>();
      for (const name of [...(await readRegistry())].sort()) {
        const position = await read(name);
        if (position !== undefined) checkpoints.set(name, position);
      }
      return checkpoints;
    },
  };
};
