/**
 * Points the real signal-cli at Signal's mock server, at test time and without touching its
 * code: signal-cli keeps its service URLs, zkgroup server parameters, sealed-sender trust root and
 * TLS trust store as constants of one class (`LiveConfig`) and a resource beside it
 * (`whisper.store`, a BKS key store with the password `whisper`). A copy of that class with the
 * mock's values, and a trust store holding the mock's certificate authority, are written to a
 * directory that goes first on signal-cli's class path. Nothing patched is committed.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { replaceClassConstants } from './java-class-constants.ts';
import { SIGNAL_CLI } from './signal-cli-daemon.ts';

const CONFIG_PACKAGE = 'org/asamk/signal/manager/config';
const LIB = path.join(path.dirname(SIGNAL_CLI), '../lib');
const LIB_JAR = path.join(LIB, 'libsignal-cli-0.13.19.jar');
const MOCK_CERTS = path.join(path.dirname(createRequire(import.meta.url).resolve('@signalapp/mock-server/package.json')), 'certs');

/** The production values in signal-cli 0.13.19's LiveConfig, each with what the mock needs instead. */
const mockValues = (javaHome: string, mockUrl: string): Map<string, string> => {
  const zk = JSON.parse(fs.readFileSync(path.join(MOCK_CERTS, 'zk-params.json'), 'utf8')) as Record<string, string>;
  const trustRoot = JSON.parse(fs.readFileSync(path.join(MOCK_CERTS, 'trust-root.json'), 'utf8')) as { publicKey: string };
  const live = new Map<string, string>([
    ['https://chat.signal.org', mockUrl],
    ['https://cdn.signal.org', mockUrl],
    ['https://cdn2.signal.org', mockUrl],
    ['https://cdn3.signal.org', `${mockUrl}/cdn3`],
    // The mock serves the storage service (and groups) under this path of the same server.
    ['https://storage.signal.org', `${mockUrl}/storageService`],
    ['BXu6QIKVz5MA8gstzfOgRQGqyLqOwNKHL6INkv3IHWMF', trustRoot.publicKey],
  ]);
  const params = serverParams(javaHome, LIB_JAR);
  live.set(params.zkGroup, zk.publicParams!);
  live.set(params.generic, zk.genericPublicParams!);
  live.set(params.backup, zk.backupPublicParams!);
  return live;
};

/**
 * The three server-parameter constants, in the order LiveConfig's static initialiser assigns
 * them (zkgroup, generic, backup), read from the class itself so that they need not be written here.
 */
const serverParams = (javaHome: string, jar: string): { zkGroup: string; generic: string; backup: string } => {
  const text = execFileSync(path.join(javaHome, 'bin/javap'), ['-c', '-p', '-classpath', jar, `${CONFIG_PACKAGE.replaceAll('/', '.')}.LiveConfig`], { encoding: 'utf8' });
  const lines = text.split('\n');
  // The constant is the last string loaded before the field is assigned (then Base64-decoded).
  const assigned = (field: string) => {
    const at = lines.findIndex((line) => line.includes(`putstatic`) && line.includes(`// Field ${field}:`));
    const loaded = lines.slice(0, Math.max(at, 0)).reverse().map((line) => /\bldc\s+#\d+\s+\/\/ String (\S+)$/.exec(line)?.[1]).find(Boolean);
    if (at < 0 || !loaded) throw new Error(`LiveConfig: no constant assigned to ${field} (a signal-cli other than 0.13.19?)`);
    return loaded;
  };
  return { zkGroup: assigned('zkGroupServerPublicParams'), generic: assigned('genericServerPublicParams'), backup: assigned('backupServerPublicParams') };
};

/**
 * Writes the patched LiveConfig and the mock's trust store under a new directory and returns it:
 * the directory to put first on signal-cli's class path.
 */
export const mockSignalCliClasspath = (options: { readonly javaHome: string; readonly mockUrl: string }): string => {
  const tool = (name: string) => path.join(options.javaHome, 'bin', name);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-signal-mock-classes-'));
  const target = path.join(root, CONFIG_PACKAGE);
  fs.mkdirSync(target, { recursive: true });
  execFileSync(tool('jar'), ['xf', LIB_JAR, `${CONFIG_PACKAGE}/LiveConfig.class`], { cwd: root });
  const classFile = path.join(target, 'LiveConfig.class');
  fs.writeFileSync(classFile, replaceClassConstants(fs.readFileSync(classFile), mockValues(options.javaHome, options.mockUrl)));
  for (const [alias, file] of [['mock-ca', 'ca-cert.pem'], ['mock-server', 'cert.pem']] as const) {
    execFileSync(tool('keytool'), [
      '-importcert', '-noprompt', '-alias', alias, '-file', path.join(MOCK_CERTS, file),
      '-keystore', path.join(target, 'whisper.store'), '-storetype', 'BKS', '-storepass', 'whisper',
      '-providerclass', 'org.bouncycastle.jce.provider.BouncyCastleProvider', '-providerpath', path.join(LIB, 'bcprov-jdk18on-1.81.jar'),
    ], { stdio: 'pipe' });
  }
  return root;
};
