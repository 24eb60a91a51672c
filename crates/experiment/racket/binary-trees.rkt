#lang racket/base
;; binary-trees (Computer Language Benchmarks Game task), written for multios (issue #13):
;; allocate and walk perfect binary trees; exercises the allocator and the collector.
(struct node (left right))

(define (make depth)
  (if (= depth 0)
      (node #f #f)
      (node (make (- depth 1)) (make (- depth 1)))))

(define (check t)
  (if (node-left t)
      (+ 1 (check (node-left t)) (check (node-right t)))
      1))

(define n (string->number (vector-ref (current-command-line-arguments) 0)))
(define max-depth (max 6 n))

(let ([d (+ max-depth 1)])
  (printf "stretch tree of depth ~a\t check: ~a\n" d (check (make d))))

(define long-lived (make max-depth))

(for ([d (in-range 4 (+ max-depth 1) 2)])
  (define iterations (arithmetic-shift 1 (+ (- max-depth d) 4)))
  (define sum
    (for/fold ([s 0]) ([_ (in-range iterations)])
      (+ s (check (make d)))))
  (printf "~a\t trees of depth ~a\t check: ~a\n" iterations d sum))

(printf "long lived tree of depth ~a\t check: ~a\n" max-depth (check long-lived))
