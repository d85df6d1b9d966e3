package server

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// FuzzServer sends arbitrary bytes to a live server as one client. The
// RESP reader has its own fuzz target (server/resp); this one covers what
// sits behind it: command dispatch, option parsing and every handler. The
// client must be answered or closed within the deadline, and the server
// must keep serving others.
func FuzzServer(f *testing.F) {
	for _, seed := range []string{
		"PING\r\n",
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"SET k v EX 10 NX GET\r\nGET k\r\nTTL k\r\n",
		"SET n 10\r\nINCRBY n -3\r\nINCRBYFLOAT n 1.5e3\r\nAPPEND n x\r\nGETRANGE n -3 -1\r\n",
		"SETRANGE k 5 abc\r\nGETEX k PXAT 99999999999999\r\nPERSIST k\r\nEXPIRE k 5 GT\r\n",
		"MSET a 1 b 2\r\nMSETNX a 1 c 3\r\nRENAME a z\r\nRENAMENX b z\r\nDEL a b z\r\n",
		"SCAN 0 MATCH [a-z]* COUNT 2 TYPE string\r\nKEYS *\r\nRANDOMKEY\r\nDBSIZE\r\n",
		"HELLO 3 SETNAME x\r\nCLIENT LIST\r\nCLIENT INFO\r\nCOMMAND DOCS get\r\nCOMMAND INFO set\r\n",
		"INFO all\r\nCONFIG GET *\r\nCONFIG SET slowlog-log-slower-than 0\r\nSLOWLOG GET -1\r\nTIME\r\n",
		"HSET h a 1 b 2\r\nHINCRBY h a 5\r\nHINCRBYFLOAT h b 0.5\r\nHGETALL h\r\nHSCAN h 0 MATCH * COUNT 1\r\nHRANDFIELD h -5 WITHVALUES\r\nHDEL h a b\r\n",
		"SADD s a b c\r\nSMOVE s t a\r\nSINTERSTORE u s t\r\nSINTERCARD 2 s t LIMIT 1\r\nSPOP s 2\r\nSRANDMEMBER t -3\r\nRENAME t h\r\n",
		"ZADD z GT CH 1 a 2.5 b -inf c\r\nZINCRBY z inf c\r\nZRANGE z (1 +inf BYSCORE REV LIMIT 0 2 WITHSCORES\r\nZRANGEBYLEX z - [b\r\nZRANK z b WITHSCORE\r\nZSCAN z 0 COUNT 1\r\n",
		"ZUNIONSTORE u 2 z s WEIGHTS 2 inf AGGREGATE MAX\r\nZINTERCARD 2 z u LIMIT 1\r\nZMPOP 2 x z MAX COUNT 2\r\nZRANDMEMBER u -3 WITHSCORES\r\nZREMRANGEBYRANK u 0 -2\r\nZPOPMIN u 5\r\n",
		"RPUSH l a b c\r\nLPUSH l z\r\nLINSERT l BEFORE b x\r\nLREM l -1 a\r\nLSET l -1 y\r\nLTRIM l 0 -2\r\nLRANGE l -100 100\r\nLPOS l x RANK -1 COUNT 0 MAXLEN 5\r\n",
		"LPOP l 2\r\nRPOP l 0\r\nLMOVE l m LEFT RIGHT\r\nRPOPLPUSH m l\r\nLMPOP 2 l m RIGHT COUNT 3\r\nLINDEX m -1\r\nLLEN l\r\nRENAME m l\r\n",
		"BLPOP l m 0.01\r\nBRPOP l 0\r\nBLMOVE l m LEFT LEFT 0.5\r\nBRPOPLPUSH m l 0\r\nBLMPOP 0 1 l LEFT COUNT 2\r\n",
		"AUTH x\r\nSELECT 0\r\nRESET\r\nFLUSHDB\r\nQUIT\r\n",
		"WATCH a h\r\nMULTI\r\nSET a 1\r\nINCR a\r\nHSET h f v\r\nKEYS *\r\nWATCH a\r\nEXEC\r\nMULTI\r\nFOO\r\nEXEC\r\nMULTI\r\nEXEC x\r\nDISCARD\r\nUNWATCH\r\n",
		"SUBSCRIBE a b\r\nPSUBSCRIBE a*\r\nPING x\r\nGET a\r\nUNSUBSCRIBE\r\nPUNSUBSCRIBE\r\nHELLO 3\r\nSUBSCRIBE c\r\nPUBLISH c m\r\nPUBSUB CHANNELS *\r\nPUBSUB NUMSUB c\r\nPUBSUB NUMPAT\r\nRESET\r\n",
		"SET \"k\\x00\" 'v\\'w'\r\n\"unbalanced\r\n",
		"*1\r\n$-1\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab",
	} {
		f.Add([]byte(seed))
	}
	s := startServer(f, func(c *Config) {
		c.ProtoMaxBulkLen = 1 << 16 // keeps SETRANGE and APPEND inputs small
		c.HTTPAddr = ""
		c.LogOutput = io.Discard
	})
	initial := s.cfg.Load()
	f.Fuzz(func(t *testing.T, data []byte) {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write(data)
		nc.(*net.TCPConn).CloseWrite()
		_, err = io.ReadAll(nc)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("no reply or close within 10s for %q", data)
		}
		// Undo whatever CONFIG SET the input ran before checking.
		s.cfgMu.Lock()
		s.cfg.Store(initial)
		s.cfgMu.Unlock()
		alive, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer alive.Close()
		alive.SetDeadline(time.Now().Add(10 * time.Second))
		alive.Write([]byte("PING\r\n"))
		buf := make([]byte, 7)
		if _, err := io.ReadFull(alive, buf); err != nil || string(buf) != "+PONG\r\n" {
			t.Fatalf("server not serving after %q: %q, %v", data, buf, err)
		}
	})
}
