; memarena gripper domain (classic STRIPS gripper, IPC 1998 semantics).
; A robot ("Robby") with grippers moves balls between rooms. Predicate and action names
; follow the usual benchmark spelling so that problems written for other suites run unchanged.
(define (domain gripper-strips)
  (:requirements :strips)
  (:predicates
    (room ?r)            ; ?r is a room
    (ball ?b)            ; ?b is a ball
    (gripper ?g)         ; ?g is a gripper
    (at-robby ?r)        ; the robot is in room ?r
    (at ?b ?r)           ; ball ?b lies in room ?r
    (free ?g)            ; gripper ?g holds nothing
    (carry ?b ?g))       ; gripper ?g holds ball ?b

  ; move the robot from one room to another
  (:action move
    :parameters (?from ?to)
    :precondition (and (room ?from) (room ?to) (at-robby ?from))
    :effect (and (at-robby ?to) (not (at-robby ?from))))

  ; pick up a ball in the robot's room with a free gripper
  (:action pick
    :parameters (?obj ?room ?gripper)
    :precondition (and (ball ?obj) (room ?room) (gripper ?gripper)
                       (at ?obj ?room) (at-robby ?room) (free ?gripper))
    :effect (and (carry ?obj ?gripper)
                 (not (at ?obj ?room))
                 (not (free ?gripper))))

  ; drop a carried ball in the robot's room
  (:action drop
    :parameters (?obj ?room ?gripper)
    :precondition (and (ball ?obj) (room ?room) (gripper ?gripper)
                       (carry ?obj ?gripper) (at-robby ?room))
    :effect (and (at ?obj ?room)
                 (free ?gripper)
                 (not (carry ?obj ?gripper)))))
