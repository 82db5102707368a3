/**
 * Relay's import rules (README, "Layout"), checked by `npm run deps` in CI: bin → apps → projections
 * → infra → domain, nothing imports upward, no circle anywhere; inside apps/, the composition root
 * (apps/boot) is imported only by the programs' entries, and the shared services (apps/services)
 * import nothing else of apps/. Tests may reach across layers (a spec of a read model that runs the
 * CLI's rebuild), so the layer rules leave spec files out; the circle rule does not.
 */
const SPEC = '\\.spec\\.tsx?$';

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'A circle of imports: modules that can only be read together.', from: {}, to: { circular: true } },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment: 'domain/ does no I/O and knows no adapter, read model or application.',
      from: { path: '^domain/', pathNot: SPEC },
      to: { path: '^(infra|projections|apps|bin|scripts)/' },
    },
    {
      name: 'infra-below-apps',
      severity: 'error',
      comment: 'Adapters make no business decisions and know no application.',
      from: { path: '^infra/', pathNot: SPEC },
      to: { path: '^(projections|apps|bin|scripts)/' },
    },
    {
      name: 'projections-below-apps',
      severity: 'error',
      from: { path: '^projections/', pathNot: SPEC },
      to: { path: '^(apps|bin|scripts)/' },
    },
    {
      name: 'services-at-the-bottom-of-apps',
      severity: 'error',
      comment: 'apps/services is what every part of apps/ uses (config, context, metrics, logger): it imports nothing else of apps/.',
      from: { path: '^apps/services/', pathNot: SPEC },
      to: { path: '^apps/(?!services/)' },
    },
    {
      name: 'composition-root-imported-by-entries-only',
      severity: 'error',
      comment: 'apps/boot wires everything; only the programs start it: bin/, the CLI, the pipeline thread entry (and scripts and tests).',
      from: { path: '^apps/', pathNot: ['^apps/(boot|cli)/', '^apps/pipeline/thread-(main|entry)\\.', SPEC] },
      to: { path: '^apps/boot/' },
    },
    {
      name: 'cli-is-an-entry',
      severity: 'error',
      comment: 'The CLI is a program: nothing of apps/ but itself imports it.',
      from: { path: '^apps/(?!cli/)', pathNot: SPEC },
      to: { path: '^apps/cli/' },
    },
    {
      name: 'dashboard-through-the-api-only',
      severity: 'error',
      comment: 'The web dashboard talks to Relay through the account API only.',
      from: { path: '^dashboard/src/' },
      to: { path: '^(apps|infra|domain|projections)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules|dashboard/dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'] },
  },
};
