# A callgate webhook receiver with Ruby's standard library only (Ruby 3.0+). It verifies each request's
# Standard Webhooks signature on the raw body, checks the timestamp, and answers fast.
#
#   WEBHOOK_SECRET=whsec_... PORT=8080 ruby receiver.rb
#
# WEBrick left the standard library in Ruby 3.0, so this speaks just enough HTTP over TCPServer. In Rails
# or Sinatra keep `verify` and pass it request.headers and request.raw_post (the raw body).
require "json"
require "openssl"
require "socket"

TOLERANCE_SECONDS = 5 * 60
# The key is the base64-decoded part after `whsec_`, not the text itself.
KEY = ENV.fetch("WEBHOOK_SECRET").delete_prefix("whsec_").unpack1("m")

class VerificationError < StandardError; end

# Returns the event if the headers sign exactly this body; raises VerificationError otherwise.
def verify(headers, body)
  id, timestamp, signatures = %w[webhook-id webhook-timestamp webhook-signature].map { |name| headers[name] }
  raise VerificationError, "missing webhook-id, webhook-timestamp or webhook-signature" unless id && timestamp && signatures
  unless timestamp.match?(/\A\d+\z/) && (Time.now.to_i - timestamp.to_i).abs <= TOLERANCE_SECONDS
    raise VerificationError, "timestamp is more than 5 minutes away from now"
  end

  expected = [OpenSSL::HMAC.digest("SHA256", KEY, "#{id}.#{timestamp}.#{body}")].pack("m0")
  # Several signatures, space-separated, while a secret is being rotated: one match is enough.
  matched = signatures.split(" ").any? do |entry|
    version, signature = entry.split(",", 2)
    version == "v1" && signature && OpenSSL.secure_compare(signature, expected)
  end
  raise VerificationError, "no matching signature" unless matched

  JSON.parse(body)
end

$stdout.sync = true
server = TCPServer.new(Integer(ENV.fetch("PORT", "8080")))
loop do
  Thread.new(server.accept) do |client|
    next unless client.gets # the request line, POST /path HTTP/1.1 (none: a bare TCP health check)

    headers = {}
    while (line = client.gets) && line != "\r\n"
      name, value = line.split(":", 2)
      headers[name.strip.downcase] = value.to_s.strip
    end
    body = client.read(headers.fetch("content-length", "0").to_i)
    begin
      event = verify(headers, body)
      puts JSON.generate(verified: true, id: event["id"], type: event["type"])
      # Answer first, work later: queue the event and skip ids already seen (retries reuse webhook-id).
      client.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    rescue VerificationError, JSON::ParserError => e
      puts JSON.generate(verified: false, error: e.message)
      client.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    end
  ensure
    client.close
  end
end
