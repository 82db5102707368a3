/** A user's registration as the history holds it, for tests that feed the read models (users model). */
export const userRegistered = (userId: string) => ({
  type: 'UserRegistered',
  data: { userId, email: `${userId}@example.com`, name: userId, registeredAt: '2026-01-01T00:00:00.000Z' },
});
