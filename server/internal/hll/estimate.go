package hll

import "math"

// histogram counts registers by value. Dense registers hold up to 63 even
// though elements produce at most 51: a hand-written value may, and Redis
// counts them without using them in the estimate.
type histogram [64]int

func (h *histogram) addDense(body []byte) {
	for i := range Registers {
		h[denseGet(body, i)]++
	}
}

// addSparse counts a sparse body's registers; false when the runs do not
// cover exactly Registers registers. Unlike conversion and merging, it
// does not stop at a run that overflows, as Redis' PFCOUNT does not.
func (h *histogram) addSparse(body []byte) bool {
	n := 0
	for p := 0; p < len(body); {
		op := body[p]
		switch {
		case op&0xc0 == 0:
			run := int(op&0x3f) + 1
			h[0] += run
			n += run
			p++
		case op&0xc0 == 0x40:
			run := xzeroLen(body, p)
			h[0] += run
			n += run
			p += 2
		default:
			run := int(op&3) + 1
			h[(op>>2)&0x1f+1] += run
			n += run
			p++
		}
	}
	return n == Registers
}

// estimate is Ertl's improved raw estimator, with Redis' rounding.
func (h *histogram) estimate() uint64 {
	const m = float64(Registers)
	const alphaInf = 0.721347520444481703680 // 1/(2 ln 2)
	z := float64(m * tau((m-float64(h[maxCount]))/m))
	for j := maxCount - 1; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z += float64(m * sigma(float64(h[0])/m))
	return uint64(math.Round(alphaInf * m * m / z))
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += float64(x * y)
		y += y
		if z == prev {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		// The conversions forbid fused multiply-adds, which would round
		// differently from Redis' C.
		z -= float64(float64((1-x)*(1-x)) * y)
		if z == prev {
			return z / 3
		}
	}
}
