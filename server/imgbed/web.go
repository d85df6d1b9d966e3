package imgbed

import "net/http"

func (h *Host) servePage(w http.ResponseWriter, r *http.Request)   { http.NotFound(w, r) }
func (h *Host) serveShareX(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
func (h *Host) servePicGo(w http.ResponseWriter, r *http.Request)  { http.NotFound(w, r) }
