package s3test

import (
	"io"
	"net/http"
	"testing"
)

// TestServer stores and reads an object with the harness's own signed
// requests, refuses a wrong key, and sees the server gone after Stop.
func TestServer(t *testing.T) {
	s := Start(t)
	if err := s.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket("bkt"); err != nil {
		t.Fatalf("creating an existing bucket again: %v", err)
	}
	if err := s.expect("PUT", "/bkt/k", []byte("hello"), http.StatusOK); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Do("GET", "/bkt/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello" {
		t.Fatalf("GET: %s %q", resp.Status, body)
	}

	wrong := &Server{Endpoint: s.Endpoint, AccessKey: s.AccessKey, SecretKey: "not-the-secret"}
	if err := wrong.expect("GET", "/bkt/k", nil, http.StatusOK); err == nil {
		t.Fatal("a wrong secret key was accepted")
	}

	s.Stop()
	s.Stop()
	if _, err := s.Do("GET", "/bkt/k", nil); err == nil {
		t.Fatal("the server still answers after Stop")
	}
}
