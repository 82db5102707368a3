import packageJson from '../../package.json' with { type: 'json' };

/** The package's semver, reported by health (built into dist/ by scripts/build.mjs). */
export const VERSION: string = packageJson.version;
