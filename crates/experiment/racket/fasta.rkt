#lang racket/base
;; fasta (Computer Language Benchmarks Game task), written for multios (issue #13): write DNA
;; sequences — a repeated one, then two drawn with a linear congruential generator from
;; cumulative probability tables — 60 characters a line. Output-bound: many writes.
(define alu
  (string-append
   "GGCCGGGCGCGGTGGCTCACGCCTGTAATCCCAGCACTTTGG"
   "GAGGCCGAGGCGGGCGGATCACCTGAGGTCAGGAGTTCGAGA"
   "CCAGCCTGGCCAACATGGTGAAACCCCGTCTCTACTAAAAAT"
   "ACAAAAATTAGCCGGGCGTGGTGGCGCGCGCCTGTAATCCCA"
   "GCTACTCGGGAGGCTGAGGCAGGAGAATCGCTTGAACCCGGG"
   "AGGCGGAGGTTGCAGTGAGCCGAGATCGCGCCACTGCACTCC"
   "AGCCTGGGCGACAGAGCGAGACTCCGTCTCAAAAA"))

(define iub
  '((#\a . 0.27) (#\c . 0.12) (#\g . 0.12) (#\t . 0.27)
    (#\B . 0.02) (#\D . 0.02) (#\H . 0.02) (#\K . 0.02)
    (#\M . 0.02) (#\N . 0.02) (#\R . 0.02) (#\S . 0.02)
    (#\V . 0.02) (#\W . 0.02) (#\Y . 0.02)))

(define homosapiens
  '((#\a . 0.3029549426680) (#\c . 0.1979883004921)
    (#\g . 0.1975473066391) (#\t . 0.3015094502008)))

(define width 60)
(define out (current-output-port))

(define (repeat-fasta id desc s n)
  (fprintf out ">~a ~a\n" id desc)
  (define len (string-length s))
  (define line (make-string width))
  (let loop ([n n] [k 0])
    (when (> n 0)
      (define m (min n width))
      (for ([i (in-range m)])
        (string-set! line i (string-ref s (modulo (+ k i) len))))
      (write-string line out 0 m)
      (newline out)
      (loop (- n m) (modulo (+ k m) len)))))

;; The generator: seed 42, IM 139968, IA 3877, IC 29573.
(define seed 42)
(define (random-next max)
  (set! seed (modulo (+ (* seed 3877) 29573) 139968))
  (/ (* max seed) 139968.0))

(define (cumulative table)
  (let loop ([t table] [acc 0.0] [out '()])
    (if (null? t)
        (reverse out)
        (let ([p (+ acc (cdar t))])
          (loop (cdr t) p (cons (cons (caar t) p) out))))))

(define (random-fasta id desc table n)
  (fprintf out ">~a ~a\n" id desc)
  (define chars (list->vector (map car (cumulative table))))
  (define probs (list->vector (map cdr (cumulative table))))
  (define last (- (vector-length probs) 1))
  (define line (make-string width))
  (let loop ([n n])
    (when (> n 0)
      (define m (min n width))
      (for ([i (in-range m)])
        (define r (random-next 1.0))
        (define j (let pick ([j 0]) (if (or (= j last) (< r (vector-ref probs j))) j (pick (+ j 1)))))
        (string-set! line i (vector-ref chars j)))
      (write-string line out 0 m)
      (newline out)
      (loop (- n m)))))

(define n (string->number (vector-ref (current-command-line-arguments) 0)))
(repeat-fasta "ONE" "Homo sapiens alu" alu (* n 2))
(random-fasta "TWO" "IUB ambiguity codes" iub (* n 3))
(random-fasta "THREE" "Homo sapiens frequency" homosapiens (* n 5))
(flush-output out)
