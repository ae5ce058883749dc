<?php
// A callgate webhook receiver in plain PHP (7.4+). It verifies each request's Standard Webhooks signature
// on the raw body, checks the timestamp, and answers fast. With the built-in server:
//
//   WEBHOOK_SECRET=whsec_... php -S 0.0.0.0:8080 receiver.php
//
// Behind nginx or Apache with PHP-FPM, the same file works as the endpoint's script.

const TOLERANCE_SECONDS = 5 * 60;

/** Returns the event if the headers sign exactly this body; throws otherwise. */
function verify(string $body, string $secret): array
{
    $id = $_SERVER['HTTP_WEBHOOK_ID'] ?? '';
    $timestamp = $_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? '';
    $signatures = $_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? '';
    if ($id === '' || $timestamp === '' || $signatures === '') {
        throw new RuntimeException('missing webhook-id, webhook-timestamp or webhook-signature');
    }
    if (!preg_match('/^\d+$/', $timestamp) || abs(time() - (int) $timestamp) > TOLERANCE_SECONDS) {
        throw new RuntimeException('timestamp is more than 5 minutes away from now');
    }
    // The key is the base64-decoded part after `whsec_`, not the text itself.
    $key = base64_decode(substr($secret, strlen('whsec_')));
    $expected = base64_encode(hash_hmac('sha256', "$id.$timestamp.$body", $key, true));
    // Several signatures, space-separated, while a secret is being rotated: one match is enough.
    foreach (explode(' ', $signatures) as $entry) {
        [$version, $signature] = array_pad(explode(',', $entry, 2), 2, '');
        if ($version === 'v1' && hash_equals($expected, $signature)) {
            return json_decode($body, true, 512, JSON_THROW_ON_ERROR);
        }
    }
    throw new RuntimeException('no matching signature');
}

function logLine(array $fields): void
{
    file_put_contents('php://stdout', json_encode($fields) . "\n");
}

try {
    // php://input is the raw body, exactly as received; do not verify a re-encoded json_decode result.
    $event = verify(file_get_contents('php://input'), getenv('WEBHOOK_SECRET') ?: '');
} catch (Exception $error) {
    logLine(['verified' => false, 'error' => $error->getMessage()]);
    http_response_code(400);
    exit;
}
logLine(['verified' => true, 'id' => $event['id'], 'type' => $event['type']]);
// Answer first, work later: queue the event and skip ids already seen (retries reuse webhook-id).
http_response_code(204);
