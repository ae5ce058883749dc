/** The curl command that places a first call, as the demo banner and the portal's quick start show it. */
export function createCallCurl(baseUrl: string, agentId: string, token = 'cg_test_…'): string {
  return [
    `curl -s ${baseUrl}/v1/calls \\`,
    `  -H "Authorization: Bearer ${token}" \\`,
    '  -H "Content-Type: application/json" \\',
    // A fresh key each time it is pasted; od and /dev/urandom where uuidgen is missing (Debian's default).
    '  -H "Idempotency-Key: $(uuidgen 2>/dev/null || od -An -tx1 -N16 /dev/urandom | tr -d \' \\n\')" \\',
    `  -d '{"agent_id": "${agentId}", "to": "+14155550123", "metadata": {"customer_name": "Ada"}}'`,
  ].join('\n');
}
