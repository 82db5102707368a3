import type { FastifyRequest } from 'fastify';
import type { UserCommand } from '../../domain/user/commands.ts';
import { userDecider, userStreamName } from '../../domain/user/decider.ts';
import type { UserEvent } from '../../domain/user/events.ts';
import type { RelayContext } from '../services/context.ts';
import { handleCommand, type HandleOptions } from '../commands/handle-command.ts';

/** A command of the signed-in user on their own stream, recorded as theirs and correlated with the request. */
export const handleUserCommand = (
  ctx: RelayContext,
  user: { readonly id: string },
  request: FastifyRequest,
  command: UserCommand,
  options?: HandleOptions<UserEvent>,
) => handleCommand(ctx.store, userStreamName(user.id), userDecider, command, { actor: `user:${user.id}`, correlationId: request.id }, options);
