/** Slash-commands the service recognises (`/start`, `/signin`, ...): flagged on the polled message. */
export const RECOGNISED_COMMANDS = ['start', 'stop', 'help', 'signin', 'link', 'login', 'logout'] as const;

const SLASH_COMMAND = /^\/([A-Za-z][A-Za-z0-9_-]*)(?:@\S+)?(?:\s|$)/;

/** The recognised command a message body starts with, if any (`/SignIn abc` → `signin`). */
export const parseCommand = (content: string): string | undefined => {
  const match = SLASH_COMMAND.exec(content.trimStart());
  const name = match?.[1]?.toLowerCase();
  return name !== undefined && (RECOGNISED_COMMANDS as readonly string[]).includes(name) ? name : undefined;
};
