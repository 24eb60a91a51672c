#lang racket/base
;; fasta, a second implementation (the paper's "fasta-3"), written for multios (issue #13): the
;; same output as fasta.rkt, built in byte strings of many lines and written a block at a time,
;; with the cumulative table looked up by bisection. Fewer, larger writes than fasta.rkt.
(define alu
  (string->bytes/latin-1
   (string-append
    "GGCCGGGCGCGGTGGCTCACGCCTGTAATCCCAGCACTTTGG"
    "GAGGCCGAGGCGGGCGGATCACCTGAGGTCAGGAGTTCGAGA"
    "CCAGCCTGGCCAACATGGTGAAACCCCGTCTCTACTAAAAAT"
    "ACAAAAATTAGCCGGGCGTGGTGGCGCGCGCCTGTAATCCCA"
    "GCTACTCGGGAGGCTGAGGCAGGAGAATCGCTTGAACCCGGG"
    "AGGCGGAGGTTGCAGTGAGCCGAGATCGCGCCACTGCACTCC"
    "AGCCTGGGCGACAGAGCGAGACTCCGTCTCAAAAA")))

(define iub
  '((#\a . 0.27) (#\c . 0.12) (#\g . 0.12) (#\t . 0.27)
    (#\B . 0.02) (#\D . 0.02) (#\H . 0.02) (#\K . 0.02)
    (#\M . 0.02) (#\N . 0.02) (#\R . 0.02) (#\S . 0.02)
    (#\V . 0.02) (#\W . 0.02) (#\Y . 0.02)))

(define homosapiens
  '((#\a . 0.3029549426680) (#\c . 0.1979883004921)
    (#\g . 0.1975473066391) (#\t . 0.3015094502008)))

(define width 60)
(define lines-per-block 256)
(define out (current-output-port))
(define block (make-bytes (* lines-per-block (+ width 1))))

;; Fills `block` with up to lines-per-block lines of at most n characters from (next-char);
;; writes it; returns the characters used.
(define (emit-block n next-char)
  (let fill ([n n] [pos 0] [used 0] [lines 0])
    (if (or (= n 0) (= lines lines-per-block))
        (begin (write-bytes block out 0 pos) used)
        (let ([m (min n width)])
          (for ([i (in-range m)])
            (bytes-set! block (+ pos i) (next-char)))
          (bytes-set! block (+ pos m) 10)
          (fill (- n m) (+ pos m 1) (+ used m) (+ lines 1))))))

(define (repeat-fasta id desc s n)
  (fprintf out ">~a ~a\n" id desc)
  (define len (bytes-length s))
  (define k 0)
  (define (next-char)
    (define c (bytes-ref s k))
    (set! k (if (= (+ k 1) len) 0 (+ k 1)))
    c)
  (let loop ([n n])
    (when (> n 0)
      (loop (- n (emit-block n next-char))))))

(define seed 42)
(define (random-next)
  (set! seed (modulo (+ (* seed 3877) 29573) 139968))
  (/ seed 139968.0))

(define (random-fasta id desc table n)
  (fprintf out ">~a ~a\n" id desc)
  (define chars (list->bytes (map (lambda (p) (char->integer (car p))) table)))
  (define probs
    (let loop ([t table] [acc 0.0] [v '()])
      (if (null? t) (list->vector (reverse v)) (let ([p (+ acc (cdar t))]) (loop (cdr t) p (cons p v))))))
  (define last (- (vector-length probs) 1))
  ;; The first j with r < probs[j] (the last one when rounding leaves r above every entry).
  (define (pick r)
    (let bisect ([lo 0] [hi last])
      (if (>= lo hi)
          lo
          (let ([mid (quotient (+ lo hi) 2)])
            (if (< r (vector-ref probs mid)) (bisect lo mid) (bisect (+ mid 1) hi))))))
  (define (next-char) (bytes-ref chars (pick (random-next))))
  (let loop ([n n])
    (when (> n 0)
      (loop (- n (emit-block n next-char))))))

(define n (string->number (vector-ref (current-command-line-arguments) 0)))
(repeat-fasta "ONE" "Homo sapiens alu" alu (* n 2))
(random-fasta "TWO" "IUB ambiguity codes" iub (* n 3))
(random-fasta "THREE" "Homo sapiens frequency" homosapiens (* n 5))
(flush-output out)
