; memarena blocksworld domain (four-operator blocks world, IPC 2000 semantics).
; One arm stacks and unstacks blocks on a table of unbounded size.
(define (domain blocksworld-4ops)
  (:requirements :strips)
  (:predicates
    (clear ?x)           ; nothing is on block ?x and the arm does not hold it
    (on-table ?x)        ; block ?x stands on the table
    (arm-empty)          ; the arm holds nothing
    (holding ?x)         ; the arm holds block ?x
    (on ?x ?y))          ; block ?x stands on block ?y

  ; take a clear block from the table
  (:action pickup
    :parameters (?ob)
    :precondition (and (clear ?ob) (on-table ?ob) (arm-empty))
    :effect (and (holding ?ob)
                 (not (clear ?ob)) (not (on-table ?ob)) (not (arm-empty))))

  ; put the held block on the table
  (:action putdown
    :parameters (?ob)
    :precondition (holding ?ob)
    :effect (and (clear ?ob) (arm-empty) (on-table ?ob)
                 (not (holding ?ob))))

  ; put the held block on a clear block
  (:action stack
    :parameters (?ob ?underob)
    :precondition (and (clear ?underob) (holding ?ob))
    :effect (and (arm-empty) (clear ?ob) (on ?ob ?underob)
                 (not (clear ?underob)) (not (holding ?ob))))

  ; take a clear block from the block below it
  (:action unstack
    :parameters (?ob ?underob)
    :precondition (and (on ?ob ?underob) (clear ?ob) (arm-empty))
    :effect (and (holding ?ob) (clear ?underob)
                 (not (on ?ob ?underob)) (not (clear ?ob)) (not (arm-empty)))))
