package imgbed

import "github.com/prometheus/client_golang/prometheus"

// metrics are the host's Prometheus collectors; each Host has its own, so
// two hosts in one process never share numbers.
type metrics struct {
	uploads       prometheus.Counter
	uploadBytes   prometheus.Counter
	dedupHits     prometheus.Counter
	deletes       prometheus.Counter
	served        prometheus.Counter
	hotBodyHits   prometheus.Counter
	uploadSeconds prometheus.Histogram
	thumbsMade    prometheus.Counter
	thumbSeconds  prometheus.Histogram
	errors        *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		uploads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lsmgo_imgbed_uploads_total", Help: "Images stored (duplicates included)."}),
		uploadBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lsmgo_imgbed_upload_bytes_total", Help: "Bytes of the images stored (duplicates included)."}),
		dedupHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lsmgo_imgbed_dedup_hits_total", Help: "Uploads whose bytes were already stored."}),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lsmgo_imgbed_deletes_total", Help: "Images deleted."}),
		served: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lsmgo_imgbed_served_total", Help: "Originals and thumbnails answered (304s and ranges included)."}),
		hotBodyHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lsmgo_imgbed_hot_body_hits_total", Help: "GETs answered with bodies kept in memory (HotBodyBytes)."}),
		uploadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "lsmgo_imgbed_upload_seconds", Help: "Time to answer a successful upload request.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}),
		thumbsMade: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lsmgo_imgbed_thumbnails_made_total", Help: "Thumbnails rendered and stored."}),
		thumbSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "lsmgo_imgbed_thumbnail_seconds", Help: "Time to render one thumbnail (decode, scale, encode).",
			Buckets: prometheus.ExponentialBuckets(0.002, 2, 13)}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lsmgo_imgbed_errors_total", Help: "Failed requests by reason."}, []string{"reason"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.uploads, m.uploadBytes, m.dedupHits, m.deletes, m.served, m.hotBodyHits,
		m.uploadSeconds, m.thumbsMade, m.thumbSeconds, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
