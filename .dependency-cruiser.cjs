/**
 * Relay's import rules (README, "Layout"), checked by `npm run deps` in CI: bin → apps → projections
 * → infra → domain, nothing imports upward, no circle anywhere; inside apps/, the composition root
 * (apps/boot) is imported only by the programs' entries, and the shared services (apps/services)
 * import nothing else of apps/. Tests may reach across layers (a spec of a read model that runs the
 * CLI's rebuild), so the layer rules leave spec files out; the circle rule does not.
 */
const SPEC = '\\.spec\\.tsx?$';

/** A rule every import must keep: none from `from` (spec files aside, unless said) may reach `to`. */
const never = (name, comment, from, to, { specsToo = false } = {}) => ({
  name,
  comment,
  severity: 'error',
  from: specsToo ? { path: from } : { path: from, pathNot: [SPEC] },
  to: { path: to },
});

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'A circle of imports: modules that can only be read together.', from: {}, to: { circular: true } },
    never('domain-is-pure', 'domain/ does no I/O and knows no adapter, read model or application.', '^domain/', '^(infra|projections|apps|bin|scripts)/'),
    never('infra-below-apps', 'Adapters make no business decisions and know no application.', '^infra/', '^(projections|apps|bin|scripts)/'),
    never('projections-below-apps', 'Read models are folded from events alone.', '^projections/', '^(apps|bin|scripts)/'),
    never('services-at-the-bottom-of-apps', 'apps/services is what every part of apps/ uses (config, context, metrics, logger): it imports nothing else of apps/.', '^apps/services/', '^apps/(?!services/)'),
    {
      ...never('composition-root-imported-by-entries-only', 'apps/boot wires everything; only the programs start it: bin/, the CLI, the pipeline thread entry (and scripts and tests).', '^apps/', '^apps/boot/'),
      from: { path: '^apps/', pathNot: ['^apps/(boot|cli)/', '^apps/pipeline/thread-(main|entry)\\.', SPEC] },
    },
    never('cli-is-an-entry', 'The CLI is a program: nothing of apps/ but itself imports it.', '^apps/(?!cli/)', '^apps/cli/'),
    {
      ...never('dashboard-through-the-api-only', 'The web dashboard talks to Relay through its HTTP routes only: it may name the shapes of their answers (type-only imports), never run server code.', '^dashboard/src/', '^(apps|infra|domain|projections)/', { specsToo: true }),
      // One exception: the statistics charts' drawing, which the server's pages and the live page both run.
      to: { path: '^(apps|infra|domain|projections)/', pathNot: '^apps/http/statistics-chart\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    never('shared-drawing-is-pure', 'The charts the server and the browser both draw import nothing: no DOM, no Node, no server code.', '^apps/http/statistics-chart\\.ts$', '.'),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules|dashboard/dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'] },
  },
};
