"""E-invoice pipeline: JSON invoice -> canonical XML -> CII / UBL / PDF, and validation on the official rules.

Data flows one way through the stages (model -> calc -> canonical -> transform -> validate -> render);
each stage is a module that can be called alone. The service layer (pipeline.service) sits on top.
"""
__version__ = "0.1.0"
