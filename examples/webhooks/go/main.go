// Command receiver is a callgate webhook receiver with Go's standard library only (Go 1.18+). It
// verifies each request's Standard Webhooks signature on the raw body, checks the timestamp, and answers
// fast.
//
//	WEBHOOK_SECRET=whsec_... PORT=8080 go run .
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const tolerance = 5 * time.Minute

// verify returns nil if the headers sign exactly this body.
func verify(key []byte, header http.Header, body []byte, now time.Time) error {
	id, timestamp, signatures := header.Get("webhook-id"), header.Get("webhook-timestamp"), header.Get("webhook-signature")
	if id == "" || timestamp == "" || signatures == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if age := now.Sub(time.Unix(seconds, 0)); err != nil || age > tolerance || age < -tolerance {
		return errors.New("timestamp is more than 5 minutes away from now")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	expected := []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	// Several signatures, space-separated, while a secret is being rotated: one match is enough.
	for _, entry := range strings.Split(signatures, " ") {
		version, signature, _ := strings.Cut(entry, ",")
		if version == "v1" && hmac.Equal([]byte(signature), expected) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

func logLine(fields map[string]any) {
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

func main() {
	// The key is the base64-decoded part after `whsec_`, not the text itself.
	secret := os.Getenv("WEBHOOK_SECRET")
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) == 0 {
		log.Fatal("WEBHOOK_SECRET must be the endpoint's secret, whsec_...")
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}

	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			err = verify(key, r.Header, body, time.Now())
		}
		var event struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if err == nil {
			err = json.Unmarshal(body, &event)
		}
		if err != nil {
			logLine(map[string]any{"verified": false, "error": err.Error()})
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		logLine(map[string]any{"verified": true, "id": event.ID, "type": event.Type})
		// Answer first, work later: queue the event and skip ids already seen (retries reuse webhook-id).
		w.WriteHeader(http.StatusNoContent)
	})
	log.Fatal(http.ListenAndServe(":"+port, nil))
}
