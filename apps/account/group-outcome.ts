import type { GroupOutcome, GroupsProjection } from '../../projections/groups/groups-projection.ts';

/**
 * What became of a group request, once the messenger answered, or `pending` after `waitMs`
 * (the change goes on: GET /group/members lists it under `changes`).
 */
export const outcomeOf = (groups: GroupsProjection, appMessengerId: string, requestId: string, waitMs: number): Promise<GroupOutcome | undefined> =>
  new Promise((resolve) => {
    const settled = () => {
      const outcome = groups.outcome(appMessengerId, requestId);
      return outcome && outcome.status !== 'pending' ? outcome : undefined;
    };
    const now = settled();
    if (now || waitMs === 0) return resolve(now ?? groups.outcome(appMessengerId, requestId));
    const finish = () => {
      clearTimeout(timer);
      unsubscribe();
      resolve(settled() ?? groups.outcome(appMessengerId, requestId));
    };
    const unsubscribe = groups.onChange((changed) => {
      if (changed === appMessengerId && settled()) finish();
    });
    const timer = setTimeout(finish, waitMs);
  });
