/**
 * The README describes the Relay of this checkout: its links stay inside the repository (a clone
 * has nothing beside it), its command table names every `relay` command, and its metrics table
 * every metric family `/metrics` exports.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli, startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The README's section under `## <title>`, up to the next `## `. */
const section = (title: string): string => {
  const start = README.indexOf(`\n## ${title}\n`);
  expect(start, `a "## ${title}" section`).toBeGreaterThan(-1);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end === -1 ? undefined : end);
};

/** The Markdown files a reader of the repository follows. */
const markdownFiles = (): string[] => {
  const under = (dir: string): string[] =>
    fs
      .readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.md'))
      .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
  return ['README.md', ...under('docs'), ...under('examples')];
};

/** The command names `relay <words> --help` lists, each with whether it takes options of its own. */
const subcommandsOf = async (words: string[]): Promise<Array<{ name: string; hasOptions: boolean }>> => {
  const help = await runCli([...words, '--help'], {});
  expect(help.code, help.stderr).toBe(0);
  const listing = help.stdout.split('\nCommands:\n')[1];
  if (listing === undefined) return [];
  return listing
    .split('\n\n')[0]!
    .split('\n')
    .map((line) => /^ {2}(\S+)( \[options\])?/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null && match[1] !== 'help')
    .map((match) => ({ name: match[1]!, hasOptions: match[2] !== undefined }));
};

/** Every runnable `relay …` command: leaves, and groups that run something themselves (`relay events`). */
const allCommands = async (words: string[] = []): Promise<string[]> => {
  const children = await subcommandsOf(words);
  const belowEach = await Promise.all(children.map(({ name }) => allCommands([...words, name])));
  return children.flatMap(({ name, hasOptions }, i) => [
    ...(belowEach[i]!.length === 0 || hasOptions ? [`relay ${[...words, name].join(' ')}`] : []),
    ...belowEach[i]!,
  ]);
};

describe('the README', () => {
  it('links only what the repository holds', () => {
    for (const file of markdownFiles()) {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      expect(text, file).not.toMatch(/\.\.\/shared|\/work\/shared/);
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!) || target!.startsWith('#')) continue;
        const resolved = path.resolve(ROOT, path.dirname(file), target!.split('#')[0]!);
        expect(resolved.startsWith(`${ROOT}${path.sep}`) && fs.existsSync(resolved), `${file} links ${target}`).toBe(true);
      }
    }
  });

  it('names every relay command in its command table', async () => {
    const table = section('Commands');
    const commands = await allCommands();
    expect(commands).toContain('relay signal link');
    const missing = commands.filter((command) => !new RegExp(`\`${command}[ \`]`).test(table));
    expect(missing).toEqual([]);
  }, 120_000);

  describe('metrics', () => {
    let relay: RelayProcess;
    beforeAll(async () => {
      relay = await startRelayProcess();
    });
    afterAll(async () => {
      await relay?.stop();
      await relay?.cleanup();
    });

    it('names every metric family /metrics exports', async () => {
      const exported = [...(await (await fetch(`${relay.url}/metrics`)).text()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
      expect(exported.length).toBeGreaterThan(20);
      const named = [...section('Metrics').matchAll(/`(relay_[a-z_]+\*?)`/g)].map((m) => m[1]!);
      const documented = (family: string) => named.some((name) => name === family || (name.endsWith('*') && family.startsWith(name.slice(0, -1))));
      expect(exported.filter((family) => !documented(family))).toEqual([]);
    });
  });
});
