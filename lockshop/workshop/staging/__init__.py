"""The lab engine: what stages a lab, apart from the labs themselves (``workshop.labs``).

* ``record``: what a lab is (``Lab``) and what it leaves (``LabRecord``, its ``Step``s);
* ``stage``: the real parts it stages on (``Parts``) and one lab being staged
  (``Stage``: what its steps call);
* ``runner``: labs run one after another and printed as they go;
* ``steps``: small helpers the labs share (a timed acquire, an outcome said);
  a holder in a process of its own is ``lockshop.cluster.holder``'s, the grader's too.
"""
