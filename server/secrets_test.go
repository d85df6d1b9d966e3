package server

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/redis/go-redis/v9"
)

// secretSettings is every setting whose value is a secret, with a valid
// sample value; every sample holds secretNeedle so that one search finds
// a leak of any of them. A new secret setting must join this table.
var secretSettings = map[string]string{
	"requirepass":          "sekrit-pass",
	"masterauth":           "sekrit-primary",
	"admin-token":          "sekrit-admin",
	"image-tokens":         "uploader:sekrit-image",
	"s3-access-key":        "sekrit-s3-id",
	"s3-secret-key":        "sekrit-s3-key",
	"images-render-secret": "sekrit-render",
}

const secretNeedle = "sekrit"

// notSecret are the settings whose names look like credentials but whose
// values are not, each with the reason.
var notSecret = map[string]string{
	"images-token-upload-rate":  "the upload rate of token holders",
	"images-token-upload-burst": "the upload burst of token holders",
	"tracking-table-max-keys":   "how many keys client-side caching tracks",
	"key-load-delay":            "Redis' test delay per key loaded",
	"rdb-key-save-delay":        "Redis' test delay per key saved",
}

// looksSecret says whether a setting's name suggests it holds a
// credential.
var looksSecret = regexp.MustCompile(`token|secret|pass|key($|s\b|-)|auth`)

// TestSecretSettingsTable walks the whole settings table: a setting whose
// name looks like a credential must be marked secret and listed in
// secretSettings, and the two must agree.
func TestSecretSettingsTable(t *testing.T) {
	for _, st := range settings {
		_, listed := secretSettings[st.name]
		if _, plain := notSecret[st.name]; looksSecret.MatchString(st.name) && !listed && !plain {
			t.Errorf("setting %q looks secret but is not in secretSettings", st.name)
		}
		if st.secret != listed {
			t.Errorf("setting %q: marked secret %v, listed in secretSettings %v", st.name, st.secret, listed)
		}
	}
	for name, sample := range secretSettings {
		if lookupSetting(name) == nil {
			t.Errorf("secretSettings lists %q, which is not a setting", name)
		}
		if !strings.Contains(sample, secretNeedle) {
			t.Errorf("sample of %q lacks %q", name, secretNeedle)
		}
	}
}

// TestSecretsNeverShown sets every secret setting, changes the live ones
// with CONFIG SET, authenticates with AUTH and HELLO while every command
// enters the slow log, then reads everything a client or a scraper can
// read: none of it may hold a secret.
func TestSecretsNeverShown(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	s := startServer(t, func(c *Config) {
		c.Overrides = map[string]string{"slowlog-log-slower-than": "0", "loglevel": "debug"}
		for name, sample := range secretSettings {
			c.Overrides[name] = sample
		}
		c.Images = false
		c.LogOutput = logs
	})
	ctx := context.Background()
	c := newClient(t, s, 2, func(o *redis.Options) { o.Password = secretSettings["requirepass"]; o.PoolSize = 1 })

	for name, sample := range secretSettings {
		if !lookupSetting(name).live {
			continue
		}
		if err := c.ConfigSet(ctx, name, sample+"-2").Err(); err != nil {
			t.Fatalf("CONFIG SET %s: %v", name, err)
		}
	}
	newPass := secretSettings["requirepass"] + "-2"
	if err := c.Do(ctx, "AUTH", newPass).Err(); err != nil {
		t.Fatalf("AUTH: %v", err)
	}
	if err := c.Do(ctx, "AUTH", "default", newPass).Err(); err != nil {
		t.Fatalf("AUTH default: %v", err)
	}
	if err := c.Do(ctx, "HELLO", "2", "AUTH", "default", newPass).Err(); err != nil {
		t.Fatalf("HELLO AUTH: %v", err)
	}
	c.Do(ctx, "AUTH", "wrong-"+secretNeedle) // a failed attempt may hold a real secret too
	// A malformed value's error reaches the logs when it comes from the
	// config file, so it must not quote the value either.
	if err := c.ConfigSet(ctx, "image-tokens", "bare-"+secretNeedle).Err(); err == nil || strings.Contains(err.Error(), secretNeedle) {
		t.Errorf("CONFIG SET image-tokens of a bare secret: %v", err)
	}

	for name := range secretSettings {
		got, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "CONFIG GET "+name, got, map[string]string{name: redactedMarker})
	}
	all, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for name := range secretSettings {
		eq(t, "CONFIG GET * "+name, all[name], redactedMarker)
	}
	views := map[string]string{"CONFIG GET *": fmt.Sprint(all)}
	info, err := c.Info(ctx, "everything").Result()
	if err != nil {
		t.Fatal(err)
	}
	views["INFO everything"] = info
	views["CLIENT LIST"] = c.ClientList(ctx).Val()
	slow, err := c.Do(ctx, "SLOWLOG", "GET", "1000").Result()
	if err != nil {
		t.Fatal(err)
	}
	views["SLOWLOG GET"] = fmt.Sprint(slow)
	if !strings.Contains(views["SLOWLOG GET"], "config set") && !strings.Contains(views["SLOWLOG GET"], "CONFIG SET") {
		t.Fatalf("the slow log lacks the CONFIG SET calls: %s", views["SLOWLOG GET"])
	}
	_, views["/metrics"] = httpGet(t, "http://"+s.HTTPAddr()+"/metrics")
	views["logs"] = logs.String()
	for what, text := range views {
		if strings.Contains(text, secretNeedle) {
			t.Errorf("%s shows a secret:\n%s", what, text)
		}
	}
}

// TestSecretUnsetAndMarker checks an unset secret reads as empty, so a
// client can tell, and that CONFIG SET refuses the marker itself: a tool
// that copies CONFIG GET * back with CONFIG SET must not replace a
// password by the marker.
func TestSecretUnsetAndMarker(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	eq(t, "CONFIG GET admin-token", c.ConfigGet(ctx, "admin-token").Val(), map[string]string{"admin-token": ""})
	if err := c.ConfigSet(ctx, "admin-token", redactedMarker).Err(); err == nil {
		t.Fatal("CONFIG SET admin-token to the marker succeeded")
	}
	eq(t, "CONFIG GET admin-token", c.ConfigGet(ctx, "admin-token").Val(), map[string]string{"admin-token": ""})
}
