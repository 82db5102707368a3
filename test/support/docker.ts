import { execFileSync } from 'node:child_process';

/** Whether a Docker engine answers here (the `docker` client alone is not enough). */
export const dockerEngineAvailable = (): boolean => {
  try {
    execFileSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
};
