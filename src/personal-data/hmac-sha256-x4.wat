;; HMAC-SHA-256 of many one-block messages (up to 55 bytes each), four at a
;; time: every 128-bit value holds the same 32-bit word of four messages, one
;; per lane, so one SIMD instruction does the work of four (FIPS 180-4 and
;; RFC 2104; the key's two midstates are computed by the caller).
;;
;; `npm run generate` assembles this file into hmac-sha256-x4.wasm.ts (with
;; wabt); a test fails when that copy drifts. hmac-batch.ts writes the
;; constants and the messages into memory at the offsets exported below and
;; reads the hex digests back.
(module
  (memory (export "memory") 3)

  ;; Memory layout (bytes). "x4": a 32-bit word repeated in the four lanes.
  ;; The code below writes these offsets as literals (a load's or store's
  ;; offset must be a constant): change both together. hmac-batch.ts reads the
  ;; globals; the token tests fail when the two disagree.
  (global (export "roundConstants") i32 (i32.const 0))     ;; K[0..63] x4
  (global (export "innerState") i32 (i32.const 1024))      ;; the key's inner midstate, 8 words x4
  (global (export "outerState") i32 (i32.const 1152))      ;; the key's outer midstate, 8 words x4
  (global (export "hexDigits") i32 (i32.const 1280))       ;; "0123456789abcdef"
  (global (export "outerBlock") i32 (i32.const 1296))      ;; inner digest (words 0-7), then padding and length (8-15) x4
  (global (export "schedule") i32 (i32.const 1552))        ;; W[0..63] of the block being compressed
  (global (export "input") i32 (i32.const 2576))           ;; message m's padded block: word i at input + 256 (m / 4) + 16 i + 4 (m % 4)
  (global (export "output") i32 (i32.const 68112))         ;; message m's digest as 64 hex characters at output + 64 m
  (global (export "capacity") i32 (i32.const 1024))        ;; messages per call (input and output hold as many)

  ;; SHA-256's compression of the blocks at $block (16 words x4 lanes)
  ;; starting from the state at $from; the new state goes to $to.
  (func $compress (param $from i32) (param $block i32) (param $to i32)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local $e v128) (local $f v128) (local $g v128) (local $h v128)
    (local $t v128) (local $x v128) (local $y v128) (local $i i32)
    ;; W[0..15]: the block.
    (local.set $i (i32.const 0))
    (loop $copy
      (v128.store offset=1552 (local.get $i) (v128.load (i32.add (local.get $block) (local.get $i))))
      (br_if $copy (i32.ne (local.tee $i (i32.add (local.get $i) (i32.const 16))) (i32.const 256))))
    ;; W[16..63] = W[i-16] + s0(W[i-15]) + W[i-7] + s1(W[i-2]); $i is the byte offset of W[i-16].
    (local.set $i (i32.const 0))
    (loop $expand
      (local.set $x (v128.load offset=1568 (local.get $i)))
      (local.set $y (v128.load offset=1776 (local.get $i)))
      (v128.store offset=1808 (local.get $i)
        (i32x4.add
          (i32x4.add (v128.load offset=1552 (local.get $i)) (v128.load offset=1696 (local.get $i)))
          (i32x4.add
            (v128.xor (v128.xor (call $rotr (local.get $x) (i32.const 7)) (call $rotr (local.get $x) (i32.const 18)))
                      (i32x4.shr_u (local.get $x) (i32.const 3)))
            (v128.xor (v128.xor (call $rotr (local.get $y) (i32.const 17)) (call $rotr (local.get $y) (i32.const 19)))
                      (i32x4.shr_u (local.get $y) (i32.const 10))))))
      (br_if $expand (i32.ne (local.tee $i (i32.add (local.get $i) (i32.const 16))) (i32.const 768))))
    (local.set $a (v128.load offset=0 (local.get $from)))
    (local.set $b (v128.load offset=16 (local.get $from)))
    (local.set $c (v128.load offset=32 (local.get $from)))
    (local.set $d (v128.load offset=48 (local.get $from)))
    (local.set $e (v128.load offset=64 (local.get $from)))
    (local.set $f (v128.load offset=80 (local.get $from)))
    (local.set $g (v128.load offset=96 (local.get $from)))
    (local.set $h (v128.load offset=112 (local.get $from)))
    ;; 64 rounds; $i is the byte offset of K[i] (and of W[i] in the schedule).
    (local.set $i (i32.const 0))
    (loop $round
      ;; T1 = h + S1(e) + Ch(e, f, g) + K[i] + W[i]
      (local.set $t
        (i32x4.add
          (i32x4.add
            (i32x4.add (local.get $h)
              (v128.xor (v128.xor (call $rotr (local.get $e) (i32.const 6)) (call $rotr (local.get $e) (i32.const 11)))
                        (call $rotr (local.get $e) (i32.const 25))))
            (v128.bitselect (local.get $f) (local.get $g) (local.get $e)))
          (i32x4.add (v128.load (local.get $i)) (v128.load offset=1552 (local.get $i)))))
      (local.set $h (local.get $g))
      (local.set $g (local.get $f))
      (local.set $f (local.get $e))
      (local.set $e (i32x4.add (local.get $d) (local.get $t)))
      (local.set $d (local.get $c))
      (local.set $c (local.get $b))
      (local.set $b (local.get $a))
      ;; a = T1 + S0(a) + Maj(a, b, c), with the old a, b, c now in b, c, d
      (local.set $a
        (i32x4.add (local.get $t)
          (i32x4.add
            (v128.xor (v128.xor (call $rotr (local.get $b) (i32.const 2)) (call $rotr (local.get $b) (i32.const 13)))
                      (call $rotr (local.get $b) (i32.const 22)))
            (v128.bitselect (local.get $d) (local.get $c) (v128.xor (local.get $b) (local.get $c))))))
      (br_if $round (i32.ne (local.tee $i (i32.add (local.get $i) (i32.const 16))) (i32.const 1024))))
    (v128.store offset=0 (local.get $to) (i32x4.add (v128.load offset=0 (local.get $from)) (local.get $a)))
    (v128.store offset=16 (local.get $to) (i32x4.add (v128.load offset=16 (local.get $from)) (local.get $b)))
    (v128.store offset=32 (local.get $to) (i32x4.add (v128.load offset=32 (local.get $from)) (local.get $c)))
    (v128.store offset=48 (local.get $to) (i32x4.add (v128.load offset=48 (local.get $from)) (local.get $d)))
    (v128.store offset=64 (local.get $to) (i32x4.add (v128.load offset=64 (local.get $from)) (local.get $e)))
    (v128.store offset=80 (local.get $to) (i32x4.add (v128.load offset=80 (local.get $from)) (local.get $f)))
    (v128.store offset=96 (local.get $to) (i32x4.add (v128.load offset=96 (local.get $from)) (local.get $g)))
    (v128.store offset=112 (local.get $to) (i32x4.add (v128.load offset=112 (local.get $from)) (local.get $h))))

  ;; Each lane rotated right by $n bits (0 < $n < 32; inlined by the compiler).
  (func $rotr (param $x v128) (param $n i32) (result v128)
    (v128.or (i32x4.shr_u (local.get $x) (local.get $n))
             (i32x4.shl (local.get $x) (i32.sub (i32.const 32) (local.get $n)))))

  ;; The state at $from (8 words x4) as four digests of 64 lower-case hex
  ;; characters at $to, $to + 64, $to + 128 and $to + 192.
  (func $hex (param $from i32) (param $to i32)
    (local $word v128) (local $high v128) (local $low v128) (local $i i32)
    (loop $word
      ;; Each lane's bytes in big-endian order, then each byte's two nibbles as digits.
      (local.set $word
        (i8x16.swizzle (v128.load (i32.add (local.get $from) (i32.shl (local.get $i) (i32.const 4))))
                       (v128.const i8x16 3 2 1 0 7 6 5 4 11 10 9 8 15 14 13 12)))
      (local.set $high (i8x16.swizzle (v128.load (i32.const 1280)) (i8x16.shr_u (local.get $word) (i32.const 4))))
      (local.set $low (i8x16.swizzle (v128.load (i32.const 1280)) (v128.and (local.get $word) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      ;; Interleaved high and low digits: lanes 0 and 1 (8 characters each), then lanes 2 and 3.
      (local.set $word (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $high) (local.get $low)))
      (local.set $high (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $high) (local.get $low)))
      (v128.store64_lane 0 (i32.add (local.get $to) (i32.shl (local.get $i) (i32.const 3))) (local.get $word))
      (v128.store64_lane offset=64 1 (i32.add (local.get $to) (i32.shl (local.get $i) (i32.const 3))) (local.get $word))
      (v128.store64_lane offset=128 0 (i32.add (local.get $to) (i32.shl (local.get $i) (i32.const 3))) (local.get $high))
      (v128.store64_lane offset=192 1 (i32.add (local.get $to) (i32.shl (local.get $i) (i32.const 3))) (local.get $high))
      (br_if $word (i32.ne (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 8)))))

  ;; The HMACs of the first $count messages of the input, as hex in the output.
  (func (export "hmac") (param $count i32)
    (local $group i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (i32.shl (local.get $group) (i32.const 2)) (local.get $count)))
        ;; Inner hash: the message's block after the key's inner block, into words 0-7 of the outer block.
        (call $compress (i32.const 1024) (i32.add (i32.const 2576) (i32.shl (local.get $group) (i32.const 8))) (i32.const 1296))
        ;; Outer hash: the inner digest after the key's outer block.
        (call $compress (i32.const 1152) (i32.const 1296) (i32.const 1296))
        (call $hex (i32.const 1296) (i32.add (i32.const 68112) (i32.shl (local.get $group) (i32.const 8))))
        (local.set $group (i32.add (local.get $group) (i32.const 1)))
        (br $next)))))
